// Package pgtest runs a throwaway PostgreSQL cluster for tests: initdb in a
// test's temporary directory, the server on a free loopback port with its
// unix socket in the same directory, stopped (and restartable) by the test.
// It uses Debian's postgresql binaries (pg_ctl on PATH, /usr/local/bin or
// /usr/lib/postgresql/<version>/bin). As root, the server runs as the
// postgres user (PostgreSQL refuses to run as root).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ErrMissing is returned when PostgreSQL is not installed.
var ErrMissing = errors.New("pgtest: PostgreSQL binaries (initdb, pg_ctl) not found; install the Debian package postgresql")

// Cluster is one throwaway cluster.
type Cluster struct {
	bin     string // directory of initdb and pg_ctl
	Data    string
	Socket  string
	Port    int
	runAs   *user.User // nil: the current user
	logFile string
}

// BinDir finds the directory of pg_ctl and initdb.
func BinDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "initdb")); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	return "", ErrMissing
}

// Start creates and starts a cluster under t.TempDir(). Without PostgreSQL
// installed it skips the test, unless CI is set (then it fails).
func Start(t testing.TB) *Cluster {
	t.Helper()
	c, err := New(t.TempDir())
	if errors.Is(err, ErrMissing) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartServer(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(true) })
	return c
}

// New runs initdb under dir (trust authentication on loopback and the socket).
func New(dir string) (*Cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, Data: filepath.Join(dir, "data"), Socket: filepath.Join(dir, "sock"), logFile: filepath.Join(dir, "postgres.log")}
	if os.Geteuid() == 0 {
		if c.runAs, err = user.Lookup("postgres"); err != nil {
			return nil, fmt.Errorf("pgtest: running as root needs the postgres user: %w", err)
		}
		// Let the postgres user reach dir (test temp dirs are 0700).
		for d := dir; d != "/" && d != "." && strings.HasPrefix(d, os.TempDir()) && d != os.TempDir(); d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o711); err != nil {
				return nil, err
			}
		}
	}
	for _, d := range []string{c.Data, c.Socket} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		if err := c.chown(d); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(c.logFile, nil, 0o600); err != nil {
		return nil, err
	}
	if err := c.chown(c.logFile); err != nil {
		return nil, err
	}
	if out, err := c.run("initdb", "-D", c.Data, "-U", "rcamesh", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return nil, fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	c.Port = port
	return c, nil
}

func (c *Cluster) chown(path string) error {
	if c.runAs == nil {
		return nil
	}
	uid, _ := strconv.Atoi(c.runAs.Uid)
	gid, _ := strconv.Atoi(c.runAs.Gid)
	return os.Chown(path, uid, gid)
}

func (c *Cluster) run(tool string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(c.bin, tool)
	var cmd *exec.Cmd
	if c.runAs != nil {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.runAs.Username, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = c.Socket
	return cmd.CombinedOutput()
}

// StartServer starts (or restarts after Stop) the server and waits until it accepts connections.
func (c *Cluster) StartServer() error {
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c full_page_writes=off", c.Port, c.Socket)
	if out, err := c.run("pg_ctl", "-D", c.Data, "-l", c.logFile, "-o", opts, "-w", "-t", "60", "start"); err != nil {
		return fmt.Errorf("pgtest: pg_ctl start: %w\n%s\n%s", err, out, c.Log())
	}
	return nil
}

// Stop stops the server: immediate (a crash: no shutdown checkpoint, the
// WAL is replayed at the next start) or fast (clean).
func (c *Cluster) Stop(immediate bool) error {
	mode := "fast"
	if immediate {
		mode = "immediate"
	}
	if out, err := c.run("pg_ctl", "-D", c.Data, "-m", mode, "-w", "stop"); err != nil {
		return fmt.Errorf("pgtest: pg_ctl stop: %w\n%s", err, out)
	}
	return nil
}

// DSN connects over TCP on loopback as the superuser rcamesh to database postgres.
func (c *Cluster) DSN() string {
	return fmt.Sprintf("postgres://rcamesh@127.0.0.1:%d/postgres?sslmode=disable", c.Port)
}

// Log is the server log.
func (c *Cluster) Log() string {
	b, _ := os.ReadFile(c.logFile)
	return string(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
