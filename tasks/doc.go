// Package tasks holds what every process needs to run tasks: the function registry that
// maps a remote function's explicit name to an executor of encoded arguments.
//
// Go cannot ship closures, so a function runs only where it was compiled in: user code
// registers each remote function at package level under an explicit name (ray.Task1 and
// friends), every process of a job runs the same binary, and a task spec names the function.
// An unknown name is an error at submission (and again at execution, for version skew).
//
// Subpackages: sched (the pure placement policy), raylet (a node's scheduler grain),
// worker (the worker grain and its executor).
package tasks
