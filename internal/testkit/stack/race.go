//go:build race

package stack

// raceBuild: the test binary runs under the race detector, so the binaries
// under test are built with it too (go test -race ./... checks the gateway
// and recordsd processes of e2e and reliability, not only the test code).
const raceBuild = true
