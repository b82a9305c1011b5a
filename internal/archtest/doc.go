// Package archtest holds no code, only the test that enforces the dependency rules of
// DESIGN §7: which packages may import which, and which packages must stay pure.
package archtest
