package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/note"

	"github.com/toolcanon/toolcanon/audit"
	"github.com/toolcanon/toolcanon/audit/pgsink"
	"github.com/toolcanon/toolcanon/canonical"
)

// auditCmd runs the audit subcommands: export, verify, tail, keygen.
func auditCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		auditUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "export":
		return auditExportCmd(args[1:], stdout, stderr)
	case "verify":
		return auditVerifyCmd(args[1:], stdout, stderr)
	case "tail":
		return auditTailCmd(args[1:], stdout, stderr)
	case "keygen":
		return auditKeygenCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		auditUsage(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "toolcanon audit: unknown command %q\n\n", args[0])
	auditUsage(stderr)
	return exitUsage
}

func auditUsage(w io.Writer) {
	fmt.Fprint(w, `Usage:
  toolcanon audit keygen --name NAME --signing-key-file FILE
      Make the exporter's Ed25519 key: the signer key (a signed-note key) is
      written to FILE (0600), the verifier key printed.
  toolcanon audit export --redis ADDR (--jsonl DIR | --postgres DSN) --signing-key-file FILE
                         [--origin NAME] [--once] [--interval 10s]
      Drain the store's audit events to the sink: a pass every --interval,
      one pass per store whatever the number of exporters (a lease), until
      SIGINT or SIGTERM; --once makes one pass and prints it.
  toolcanon audit verify (PATH | --postgres DSN) [--key VERIFIER_KEY]... [--key-file FILE]
                         [--checkpoint FILE] [--partial]
      Check an export offline: a JSONL file or directory, or the PostgreSQL
      tables. Exit 0 when it verifies, 1 with each problem found.
  toolcanon audit tail DIR [-n 20] [--follow]
      Print the last events of a JSONL export, one line each; --follow
      prints new ones as they come.

A DSN never carries a password: set PGPASSWORD, or use a .pgpass file.
`)
}

// auditFlags turn the audit stream of a command's store on, and, for the
// gateway, run its exporter.
type auditFlags struct {
	keyFile, keyID string
	sink           sinkFlags
	signingKey     string
	origin         string
	interval       time.Duration
}

func (f *auditFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.keyFile, "audit-key-file", "", "turn the store's audit stream on: the operator's HMAC key of its digests (32 bytes or more; a trailing newline is dropped)")
	fs.StringVar(&f.keyID, "audit-key-id", "", "with --audit-key-file: the key's id, named in every event")
	fs.StringVar(&f.sink.jsonl, "audit-jsonl", "", "export the audit stream to this directory (JSONL), a pass every --audit-interval")
	fs.StringVar(&f.sink.postgres, "audit-postgres", "", "export the audit stream to this PostgreSQL database (no password in it: PGPASSWORD)")
	fs.StringVar(&f.sink.table, "audit-table", pgsink.DefaultTable, "with --audit-postgres: the tables' prefix")
	fs.StringVar(&f.signingKey, "audit-signing-key-file", "", "with an export: the signer key of its checkpoints (toolcanon audit keygen)")
	fs.StringVar(&f.origin, "audit-origin", "toolcanon", "with an export: the origin named in its events and checkpoints")
	fs.DurationVar(&f.interval, "audit-interval", audit.DefaultInterval, "with an export: the time between its passes")
}

// options returns the store's audit options: nil when --audit-key-file is
// not given.
func (f *auditFlags) options() (*canonical.AuditOptions, error) {
	exports := f.sink.jsonl != "" || f.sink.postgres != ""
	if f.keyFile == "" {
		if exports || f.keyID != "" {
			return nil, errors.New("--audit-key-file turns the audit stream on: an export or a key id needs it")
		}
		return nil, nil
	}
	b, err := os.ReadFile(f.keyFile)
	if err != nil {
		return nil, err
	}
	o := &canonical.AuditOptions{Key: []byte(strings.TrimSuffix(string(b), "\n")), KeyID: f.keyID}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("--audit-key-file, --audit-key-id: %v", err)
	}
	if exports && (f.signingKey == "" || f.sink.jsonl != "" && f.sink.postgres != "" || f.interval <= 0) {
		return nil, errors.New("an export needs one of --audit-jsonl and --audit-postgres, --audit-signing-key-file and a positive --audit-interval")
	}
	if exports && !audit.ValidOrigin(f.origin) {
		return nil, errors.New("--audit-origin: 1-64 characters of [A-Za-z0-9_.-]")
	}
	return o, nil
}

// exporter returns the exporter of src the flags name, and what closes
// its sink; nil when they name none.
func (f *auditFlags) exporter(ctx context.Context, src canonical.AuditSource, log *slog.Logger) (*audit.Exporter, func(), error) {
	if f.sink.jsonl == "" && f.sink.postgres == "" {
		return nil, func() {}, nil
	}
	signer, err := readSigner(f.signingKey)
	if err != nil {
		return nil, nil, err
	}
	sink, closeSink, err := openSink(ctx, f.sink, audit.DefaultJSONLMaxBytes)
	if err != nil {
		return nil, nil, err
	}
	return &audit.Exporter{Source: src, Sink: sink, Signer: signer, Origin: f.origin, Interval: f.interval, Logger: log},
		closeSink, nil
}

// sinkFlags name the sink of an export or a verification.
type sinkFlags struct {
	jsonl, postgres, table string
}

func (f *sinkFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.jsonl, "jsonl", "", "the export's directory: CloudEvents JSON lines, rotated")
	fs.StringVar(&f.postgres, "postgres", "", "a PostgreSQL connection string (no password: PGPASSWORD or .pgpass)")
	fs.StringVar(&f.table, "table", pgsink.DefaultTable, "with --postgres: the tables' prefix")
}

// checkDSN refuses a connection string that holds a password.
func checkDSN(dsn string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("--postgres: %v", err)
	}
	if cfg.Password != "" && os.Getenv("PGPASSWORD") != cfg.Password {
		return errors.New("--postgres: a connection string with a password is refused (ps and shell history show it): set PGPASSWORD or use a .pgpass file")
	}
	return nil
}

// readSigner reads a signer key file (audit keygen).
func readSigner(path string) (note.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := note.NewSigner(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("%s: not a signer key (toolcanon audit keygen): %v", path, err)
	}
	return s, nil
}

func auditKeygenCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("audit keygen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "the key's name, as checkpoints' signature lines show it (e.g. audit.example.com)")
	out := fs.String("signing-key-file", "", "where the signer key is written (created, 0600)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *name == "" || *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "toolcanon audit keygen: --name and --signing-key-file are required")
		return exitUsage
	}
	skey, vkey, err := audit.GenerateKey(*name)
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon audit keygen: %v\n", err)
		return exitUsage
	}
	f, err := os.OpenFile(*out, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = fmt.Fprintln(f, skey)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon audit keygen: %v\n", err)
		return exitFailure
	}
	fmt.Fprintln(stdout, vkey)
	return exitOK
}

func auditExportCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("audit export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var rf redisFlags
	rf.register(fs)
	var sf sinkFlags
	sf.register(fs)
	keyFile := fs.String("signing-key-file", "", "the signer key of the checkpoints (toolcanon audit keygen)")
	origin := fs.String("origin", "toolcanon", "names the store in the events' source and the checkpoints")
	once := fs.Bool("once", false, "one pass, then exit")
	interval := fs.Duration("interval", audit.DefaultInterval, "time between passes")
	maxBytes := fs.Int64("max-file-bytes", audit.DefaultJSONLMaxBytes, "with --jsonl: start a new file past this size")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if err := rf.check(); err != nil {
		fmt.Fprintf(stderr, "toolcanon audit export: %v\n", err)
		return exitUsage
	}
	if !rf.given() || (sf.jsonl == "") == (sf.postgres == "") || *keyFile == "" || fs.NArg() > 0 || *interval <= 0 {
		fmt.Fprintln(stderr, "toolcanon audit export: --redis, one of --jsonl and --postgres, and --signing-key-file are required")
		return exitUsage
	}
	if !audit.ValidOrigin(*origin) {
		fmt.Fprintln(stderr, "toolcanon audit export: --origin: 1-64 characters of [A-Za-z0-9_.-]")
		return exitUsage
	}
	signer, err := readSigner(*keyFile)
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon audit export: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sink, closeSink, err := openSink(ctx, sf, *maxBytes)
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon audit export: %v\n", err)
		return exitFailure
	}
	defer closeSink()
	store, err := rf.open()
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon audit export: %v\n", err)
		return codeExit(err)
	}
	defer store.Close()
	x := &audit.Exporter{Source: store, Sink: sink, Signer: signer, Origin: *origin, Interval: *interval,
		Logger: slog.New(slog.NewTextHandler(stdout, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	if !*once {
		fmt.Fprintf(stderr, "toolcanon audit export: a pass every %v; stop with SIGINT or SIGTERM\n", *interval)
		if err := x.Run(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintf(stderr, "toolcanon audit export: %v\n", err)
			return exitFailure
		}
		return exitOK
	}
	start := time.Now()
	rep, err := x.Pass(ctx)
	if !rep.Leased && err == nil {
		fmt.Fprintln(stdout, "another exporter holds the store's export lease: nothing done")
		return exitOK
	}
	fmt.Fprintf(stdout, "%d event(s) of %d run(s) exported in %d batch(es), %d run(s) acknowledged, %d left pending, in %v\n",
		rep.Exported, rep.Runs, rep.Batches, rep.Acked, rep.Pending, time.Since(start).Round(time.Millisecond))
	if rep.Broken > 0 {
		fmt.Fprintf(stdout, "%d event(s) did not continue their run's chain head (it was lost): exported from genesis; verification reports them\n", rep.Broken)
	}
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon audit export: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// openSink opens the sink the flags name.
func openSink(ctx context.Context, sf sinkFlags, maxBytes int64) (audit.Sink, func(), error) {
	if sf.jsonl != "" {
		j, err := audit.OpenJSONL(sf.jsonl, audit.JSONLOptions{MaxBytes: maxBytes})
		if err != nil {
			return nil, nil, err
		}
		return j, func() { j.Close() }, nil
	}
	if err := checkDSN(sf.postgres); err != nil {
		return nil, nil, err
	}
	p, err := pgsink.Open(ctx, sf.postgres, pgsink.Options{Table: sf.table})
	if err != nil {
		return nil, nil, err
	}
	return p, func() { p.Close() }, nil
}

// keyList collects repeated --key flags.
type keyList []string

func (k *keyList) String() string     { return strings.Join(*k, ",") }
func (k *keyList) Set(v string) error { *k = append(*k, v); return nil }

func auditVerifyCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var keys keyList
	fs.Var(&keys, "key", "a verifier key of the checkpoints (repeat for several)")
	keyFile := fs.String("key-file", "", "a file of verifier keys, one a line")
	postgres := fs.String("postgres", "", "verify the PostgreSQL tables of this connection string")
	table := fs.String("table", pgsink.DefaultTable, "with --postgres: the tables' prefix")
	cpFile := fs.String("checkpoint", "", "the latest checkpoint, kept apart from the export: the export must reach it")
	partial := fs.Bool("partial", false, "accept an export whose beginning was removed (past the retention)")
	if err := fs.Parse(reorder(args)); err != nil {
		return exitUsage
	}
	if (*postgres == "") == (fs.NArg() != 1) {
		fmt.Fprintln(stderr, "toolcanon audit verify: one PATH (a JSONL file or directory) or --postgres")
		return exitUsage
	}
	if *keyFile != "" {
		b, err := os.ReadFile(*keyFile)
		if err != nil {
			fmt.Fprintf(stderr, "toolcanon audit verify: %v\n", err)
			return exitUsage
		}
		n := len(keys)
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				keys = append(keys, l)
			}
		}
		if len(keys) == n {
			// An empty file (a keygen that wrote nothing, a truncated copy)
			// would otherwise verify with no signature checked.
			fmt.Fprintf(stderr, "toolcanon audit verify: --key-file %s holds no key\n", *keyFile)
			return exitUsage
		}
	}
	opts := audit.VerifyOptions{Partial: *partial}
	if len(keys) > 0 {
		var vs []note.Verifier
		for _, k := range keys {
			v, err := note.NewVerifier(k)
			if err != nil {
				fmt.Fprintf(stderr, "toolcanon audit verify: --key %q: %v\n", k, err)
				return exitUsage
			}
			vs = append(vs, v)
		}
		opts.Verifiers = note.VerifierList(vs...)
	}
	if *cpFile != "" {
		b, err := os.ReadFile(*cpFile)
		if err != nil {
			fmt.Fprintf(stderr, "toolcanon audit verify: %v\n", err)
			return exitUsage
		}
		var cp audit.Checkpoint
		if opts.Verifiers != nil {
			cp, err = audit.Open(b, opts.Verifiers)
		} else {
			cp, err = audit.ParseCheckpoint(b)
		}
		if err != nil {
			fmt.Fprintf(stderr, "toolcanon audit verify: --checkpoint: %v\n", err)
			return exitFailure
		}
		opts.Latest = &cp
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var rep audit.VerifyReport
	var err error
	what := fs.Arg(0)
	if *postgres != "" {
		what = "the tables " + *table + "_*"
		if err = checkDSN(*postgres); err == nil {
			var sink *pgsink.Sink
			if sink, err = pgsink.Open(ctx, *postgres, pgsink.Options{Table: *table}); err == nil {
				rep, err = sink.Verify(ctx, opts)
				sink.Close()
			}
		}
	} else {
		rep, err = audit.VerifyJSONL(fs.Arg(0), opts)
	}
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon audit verify: %v\n", err)
		return exitUsage
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(stdout, "FAIL %s\n", p)
	}
	signed := "checkpoint signatures checked"
	if !rep.Signed {
		signed = "checkpoint signatures NOT checked (no --key)"
	}
	fmt.Fprintf(stdout, "%s: %d event(s) in %d stream(s), %d checkpoint(s), %d replay(s) matched; %s\n",
		what, rep.Events, rep.Streams, rep.Checkpoints, rep.Replays, signed)
	if rep.Partial > 0 {
		fmt.Fprintf(stdout, "%d stream(s) start after their first event (--partial)\n", rep.Partial)
	}
	if !rep.OK() {
		fmt.Fprintf(stdout, "NOT VERIFIED: %d problem(s)\n", len(rep.Problems))
		return exitFailure
	}
	fmt.Fprintln(stdout, "verified")
	return exitOK
}

// reorder puts flags before the one positional argument, so that both
// "verify DIR --key K" and "verify --key K DIR" parse.
func reorder(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			flags = append(flags, a)
			if !strings.Contains(a, "=") && a != "--partial" && a != "-partial" && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}

func auditTailCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("audit tail", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 20, "how many of the last events to print")
	follow := fs.Bool("follow", false, "then print new events as they are exported, until SIGINT or SIGTERM")
	if err := fs.Parse(reorder(args)); err != nil {
		return exitUsage
	}
	if fs.NArg() != 1 || *n < 0 {
		fmt.Fprintln(stderr, "toolcanon audit tail: one DIR (or file) of a JSONL export")
		return exitUsage
	}
	path := fs.Arg(0)
	var last []string
	if err := audit.ReadJSONL(path, func(_ string, l audit.Line) error {
		last = append(last, describe(l))
		if len(last) > *n {
			last = last[1:]
		}
		return nil
	}); err != nil {
		fmt.Fprintf(stderr, "toolcanon audit tail: %v\n", err)
		return exitFailure
	}
	for _, l := range last {
		fmt.Fprintln(stdout, l)
	}
	if !*follow {
		return exitOK
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return followJSONL(ctx, path, stdout, stderr)
}

// followJSONL prints the lines appended to the export from now on.
func followJSONL(ctx context.Context, path string, stdout, stderr io.Writer) int {
	file, off := "", int64(0)
	current := func() string {
		if st, err := os.Stat(path); err == nil && !st.IsDir() {
			return path
		}
		files, _ := audit.JSONLFiles(path)
		if len(files) == 0 {
			return ""
		}
		return files[len(files)-1]
	}
	file = current()
	if st, err := os.Stat(file); err == nil {
		off = st.Size()
	}
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return exitOK
		case <-t.C:
		}
		if f := current(); f != file {
			file, off = f, 0
		}
		fh, err := os.Open(file)
		if err != nil {
			continue
		}
		fh.Seek(off, io.SeekStart)
		r := bufio.NewReader(fh)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				break // a line not ended yet is read again next time
			}
			off += int64(len(line))
			l, perr := audit.ParseLine(line[:len(line)-1])
			if perr != nil {
				fmt.Fprintf(stderr, "toolcanon audit tail: %s: %v\n", filepath.Base(file), perr)
				continue
			}
			fmt.Fprintln(stdout, describe(l))
		}
		fh.Close()
	}
}

// describe is one line of tail: an event's time, id, type and what it
// says, or a checkpoint's number and heads.
func describe(l audit.Line) string {
	if cp := l.Checkpoint; cp != nil {
		return fmt.Sprintf("%s checkpoint %d: %d head(s), signed", cp.Time.Format("2006-01-02T15:04:05.000Z"), cp.N, len(cp.Heads))
	}
	e := l.Event
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %-11s", e.Time.Format("2006-01-02T15:04:05.000Z"), e.ID(), e.Type)
	add := func(k, v string) {
		if v != "" && v != "0" {
			fmt.Fprintf(&b, " %s=%s", k, v)
		}
	}
	add("call", e.ToolCallID)
	add("tool", e.Tool)
	add("def", e.ToolVersion)
	add("status", string(e.Status))
	add("code", string(e.Code))
	add("exec", e.Execution)
	if e.Principal != "" {
		add("principal", e.Principal[:12])
	}
	add("request", size(e.RequestSize))
	add("raw", size(e.RawSize))
	add("result", size(e.ResultSize))
	if !e.WaitUntil.IsZero() {
		add("until", e.WaitUntil.Format("2006-01-02T15:04:05.000Z"))
	}
	add("input", size(e.InputSize))
	add("trace", e.TraceID)
	return b.String()
}

func size(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%dB", n)
}
