package stack

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRaceReportFindsARealRace builds a program with a data race under the
// race detector, runs it, and checks raceReport finds the report in its
// output, and nothing in a clean run's.
func TestRaceReportFindsARealRace(t *testing.T) {
	dir := t.TempDir()
	src := `package main

import (
	"fmt"
	"sync"
)

func main() {
	n := 0
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); n++ }()
	}
	wg.Wait()
	fmt.Println("done", n)
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module racy\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "racy")
	build := exec.Command("go", "build", "-race", "-o", bin, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -race: %v\n%s", err, out)
	}
	out, _ := exec.Command(bin).CombinedOutput() // exits 66 after reporting
	report := raceReport(out)
	if report == nil || !strings.Contains(string(report), "main.main.func1") {
		t.Fatalf("no race report found in:\n%s", out)
	}
	if raceReport([]byte("done 2\n")) != nil {
		t.Fatal("a clean output reported as a race")
	}
}
