package stack

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Proc is a long-running process started by SpawnProc.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	Log  string // file holding its output
	done chan struct{}
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill ends the process with SIGKILL (no shutdown of any kind, as a crash or
// the OOM killer would) and waits until it is gone.
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop asks the process to stop (SIGTERM), kills it after 10 s and waits.
func (p *Proc) Stop() {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.Kill()
	}
}

// Spawn starts a long-running process whose output goes to a log file; it is
// stopped with SIGTERM when the test ends.
func (s *Stack) Spawn(name, bin string, args ...string) *exec.Cmd {
	s.t.Helper()
	return s.SpawnProc(name, bin, args...).Cmd
}

// SpawnProc is Spawn returning the process handle. A name spawned again (a
// restart) logs to a new file, name-2.log, name-3.log, …
func (s *Stack) SpawnProc(name, bin string, args ...string) *Proc {
	s.t.Helper()
	logPath := filepath.Join(s.Dir, name+".log")
	for i := 2; ; i++ {
		if _, err := os.Stat(logPath); os.IsNotExist(err) {
			break
		}
		logPath = filepath.Join(s.Dir, name+"-"+strconv.Itoa(i)+".log")
	}
	f, err := os.Create(logPath)
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = s.Root
	cmd.Env = s.Env
	cmd.Stdout = f
	cmd.Stderr = f
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start %s: %v", name, err)
	}
	s.Logs = append(s.Logs, logPath)
	p := &Proc{Name: name, Cmd: cmd, Log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	s.t.Cleanup(func() {
		p.Stop()
		_ = f.Close()
		if b, err := os.ReadFile(logPath); err == nil {
			if report := raceReport(b); report != nil {
				s.t.Errorf("%s reported a data race:\n%s", filepath.Base(logPath), report)
			}
		}
		if s.t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				s.t.Logf("%s log (last 4 KiB):\n%s", filepath.Base(logPath), tail(b, 4096))
			}
		}
	})
	return p
}

// raceReport returns the first data-race report in a process's output (up
// to 8 KiB of it), or nil.
func raceReport(out []byte) []byte {
	i := bytes.Index(out, []byte("WARNING: DATA RACE"))
	if i < 0 {
		return nil
	}
	return out[i:min(len(out), i+8192)]
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
