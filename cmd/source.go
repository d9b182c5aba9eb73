package cmd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/internal/strictjson"
)

// sourceFlags choose where connection settings come from besides the
// connection flags: a NATS CLI context, then the environment.
type sourceFlags struct {
	context string
}

func (s *sourceFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.context, "context", "", "connect as the NATS CLI context `NAME` says (default: the context 'nats context select' chose, if any)")
}

// natsContext is the part of a NATS CLI context file (ADR-21:
// $XDG_CONFIG_HOME/nats/context/NAME.json) that sharedconfig uses.
type natsContext struct {
	URL      string `json:"url"`
	Creds    string `json:"creds"`
	NKey     string `json:"nkey"`
	User     string `json:"user"`
	Password string `json:"password"`
	Token    string `json:"token"`
	CA       string `json:"ca"`
	Cert     string `json:"cert"`
	Key      string `json:"key"`
}

// natsConfigDir is where the nats tool keeps its contexts.
func natsConfigDir() (string, error) {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "nats"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".config", "nats"), nil
}

// loadContext reads the context named, or the selected one when name is
// empty. It returns the context's name, "" when none is selected.
func loadContext(name string) (string, natsContext, error) {
	var ctx natsContext
	dir, err := natsConfigDir()
	if err != nil {
		if name == "" {
			return "", ctx, nil
		}
		return "", ctx, fmt.Errorf("--context %s: %w", name, err)
	}
	if name == "" {
		b, err := readSmallFile(filepath.Join(dir, "context.txt"))
		if errors.Is(err, fs.ErrNotExist) {
			return "", ctx, nil
		}
		if err != nil {
			return "", ctx, fmt.Errorf("reading the selected NATS context: %w", err)
		}
		if name = strings.TrimSpace(string(b)); name == "" {
			return "", ctx, nil
		}
	}
	if name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return "", ctx, fmt.Errorf("NATS context %q: a context name holds no path separators", name)
	}
	path := filepath.Join(dir, "context", name+".json")
	b, err := readSmallFile(path)
	if err != nil {
		return "", ctx, fmt.Errorf("NATS context %q: %w", name, err)
	}
	if err := strictjson.UnmarshalIgnoringUnknown(b, &ctx); err != nil {
		return "", ctx, fmt.Errorf("NATS context %q: %s is not a context file: %v", name, path, err)
	}
	for _, p := range []*string{&ctx.Creds, &ctx.NKey, &ctx.CA, &ctx.Cert, &ctx.Key} {
		*p = expandHome(*p)
	}
	return name, ctx, nil
}

// maxContextFile bounds what is read of a context file or context.txt: the
// nats tool writes a few hundred bytes.
const maxContextFile = 64 << 10

// readSmallFile reads a file of the nats tool's, refusing what is not a
// regular file (a device such as /dev/zero never ends; a FIFO blocks) or
// is larger than maxContextFile, rather than reading it into memory.
func readSmallFile(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxContextFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxContextFile {
		return nil, fmt.Errorf("%s is larger than %d KiB, which no context file is", path, maxContextFile>>10)
	}
	return b, nil
}

// expandHome expands a leading ~/ as the nats tool does.
func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

// apply fills in what the connection flags left empty: first from the NATS
// context, then, for credentials, from NATS_CREDS, NATS_USER, NATS_PASSWORD
// and NATS_TOKEN (which, unlike flags, do not show in ps). Credentials come
// whole from one place. It returns where the server and credentials came
// from, for STATUS; it never names a secret.
func (s *sourceFlags) apply(o *localserver.ConnectOptions) (string, error) {
	name, ctx, err := loadContext(s.context)
	if err != nil {
		return "", err
	}
	var via []string
	ctxName := fmt.Sprintf("context %q", name)
	// Flags alone need no explaining; beside a context they do.
	fromFlags := func(what string) {
		if name != "" {
			via = append(via, what)
		}
	}
	switch {
	case o.URLs != "":
		fromFlags("server from --server")
	case ctx.URL != "":
		o.URLs = ctx.URL
		via = append(via, "server from "+ctxName)
	}
	switch {
	case o.HasAuth():
		fromFlags("credentials from flags")
	case ctx.Creds != "" || ctx.NKey != "" || ctx.User != "" || ctx.Password != "" || ctx.Token != "":
		o.Creds, o.NKey, o.User, o.Password, o.Token = ctx.Creds, ctx.NKey, ctx.User, ctx.Password, ctx.Token
		via = append(via, "credentials from "+ctxName)
	case o.URLs == "" && os.Getenv("NATS_URL") == "":
		// No server address: the local server, which admits its owner by
		// the data directory's keys. Credentials in the environment are for
		// servers given by address, and must not lock the user out of it.
	default:
		var vars []string
		for _, e := range []struct {
			name string
			to   *string
		}{{"NATS_CREDS", &o.Creds}, {"NATS_USER", &o.User}, {"NATS_PASSWORD", &o.Password}, {"NATS_TOKEN", &o.Token}} {
			if v := os.Getenv(e.name); v != "" {
				*e.to = v
				vars = append(vars, e.name)
			}
		}
		if len(vars) > 0 {
			via = append(via, "credentials from "+strings.Join(vars, ", "))
		}
	}
	tls := false
	for _, f := range []struct {
		to   *string
		from string
	}{{&o.CACert, ctx.CA}, {&o.Cert, ctx.Cert}, {&o.Key, ctx.Key}} {
		if *f.to == "" && f.from != "" {
			*f.to, tls = f.from, true
		}
	}
	if tls {
		via = append(via, "TLS files from "+ctxName)
	}
	return strings.Join(via, ", "), nil
}
