// Package archtest holds no code: its test checks the module's shape. The
// dependencies point down (cmd -> internal/lifecycle -> session/* ->
// reactor, protocol; protocol imports nothing of this module), product code
// never imports benchmarks/ or internal/testkit/, and no package or file
// outgrows the size rules. See deps_test.go for the rules and how they are
// read (one go list over the module).
package archtest
