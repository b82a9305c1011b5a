// Package archtest holds no code, only the tests that enforce the layering of DESIGN §7:
// a ranked table of the module's packages (base, domain, assembly, the user API, its users,
// the programs), in which a package may import only lower ranks; the leaves; that only the
// GCS's etcd implementation imports etcd; that only the CLI and the root package read the
// environment; and that the pure packages (policies and state machines) import no
// protoactor, start no goroutines and read no clock.
package archtest
