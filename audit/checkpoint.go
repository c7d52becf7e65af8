package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"golang.org/x/mod/sumdb/note"
)

// Checkpoint is a signed statement of where the exported chains stand: the
// head (run, generation, sequence number, hash) of every stream a batch of
// the export advanced, numbered from 1 per sink and chained to the one
// before. It is a signed note (golang.org/x/mod/sumdb/note, Ed25519), so
// any tool that reads notes checks it with the exporter's verifier key:
//
//	toolcanon audit checkpoint v1
//	origin <origin>
//	n <N>
//	prev <SHA-256 of checkpoint N-1's text, hex; "-" for N = 1>
//	time <ms since the epoch>
//	<run> <gen> <seq> <hash>
//	...
//
//	— <key name> <signature>
type Checkpoint struct {
	Origin string
	N      int64
	Prev   string // "" for N = 1
	Time   time.Time
	Heads  []Head
	Note   []byte // the signed note: its text and signature lines
}

// Head is where one stream's chain stands.
type Head struct {
	RunID, Gen string
	Seq        int64
	Hash       string
}

const checkpointTitle = "toolcanon audit checkpoint v1"

// runs returns the runs of c's heads, each once.
func (c *Checkpoint) runs() []string {
	var out []string
	seen := map[string]bool{}
	for _, h := range c.Heads {
		if !seen[h.RunID] {
			seen[h.RunID] = true
			out = append(out, h.RunID)
		}
	}
	return out
}

// ID is the checkpoint's CloudEvents id.

func (c *Checkpoint) ID() string { return "checkpoint/" + strconv.FormatInt(c.N, 10) }

// Text returns the note's text: what the signature covers.
func (c *Checkpoint) Text() string {
	var b strings.Builder
	prev := c.Prev
	if prev == "" {
		prev = "-"
	}
	fmt.Fprintf(&b, "%s\norigin %s\nn %d\nprev %s\ntime %d\n", checkpointTitle, c.Origin, c.N, prev, c.Time.UnixMilli())
	for _, h := range c.Heads {
		fmt.Fprintf(&b, "%s %s %d %s\n", h.RunID, h.Gen, h.Seq, h.Hash)
	}
	return b.String()
}

// Digest is what the next checkpoint's Prev names: the hex SHA-256 of
// this one's text.
func (c *Checkpoint) Digest() string {
	sum := sha256.Sum256([]byte(c.Text()))
	return hex.EncodeToString(sum[:])
}

// ValidOrigin reports whether o can name an export's origin: 1–64 bytes
// of [A-Za-z0-9_.-], starting with a letter or digit.
func ValidOrigin(o string) bool {
	return len(o) <= 64 && canonical.ValidateRunID(o) == nil
}

// Sign makes c's Note with signer.
func (c *Checkpoint) Sign(signer note.Signer) error {
	msg, err := note.Sign(&note.Note{Text: c.Text()}, signer)
	if err != nil {
		return fmt.Errorf("audit: sign checkpoint %d: %w", c.N, err)
	}
	c.Note = msg
	return nil
}

// ParseCheckpoint reads a checkpoint's note without checking its
// signature (Open does).
func ParseCheckpoint(msg []byte) (Checkpoint, error) {
	var c Checkpoint
	i := bytes.Index(msg, []byte("\n\n"))
	if i < 0 {
		return c, fmt.Errorf("%w: a checkpoint without signature lines", ErrFormat)
	}
	text := string(msg[:i+1])
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 5 || lines[0] != checkpointTitle {
		return c, fmt.Errorf("%w: not a checkpoint", ErrFormat)
	}
	field := func(line, name string) (string, bool) {
		return strings.CutPrefix(line, name+" ")
	}
	var ok bool
	var n, ms string
	if c.Origin, ok = field(lines[1], "origin"); !ok || !ValidOrigin(c.Origin) {
		return c, fmt.Errorf("%w: checkpoint origin", ErrFormat)
	}
	if n, ok = field(lines[2], "n"); !ok {
		return c, fmt.Errorf("%w: checkpoint number", ErrFormat)
	}
	var err error
	if c.N, err = positiveInt(n); err != nil {
		return c, fmt.Errorf("%w: checkpoint number: %v", ErrFormat, err)
	}
	if c.Prev, ok = field(lines[3], "prev"); !ok || (c.Prev != "-" && !isHash(c.Prev)) || (c.Prev == "-") != (c.N == 1) {
		return c, fmt.Errorf("%w: checkpoint %d's prev", ErrFormat, c.N)
	}
	if c.Prev == "-" {
		c.Prev = ""
	}
	if ms, ok = field(lines[4], "time"); !ok {
		return c, fmt.Errorf("%w: checkpoint time", ErrFormat)
	}
	t, err := positiveInt(ms)
	if err != nil {
		return c, fmt.Errorf("%w: checkpoint time: %v", ErrFormat, err)
	}
	c.Time = time.UnixMilli(t).UTC()
	for _, l := range lines[5:] {
		w := strings.Split(l, " ")
		if len(w) != 4 || canonical.ValidateRunID(w[0]) != nil || w[1] == "" || !isHash(w[3]) {
			return c, fmt.Errorf("%w: checkpoint %d's head %q", ErrFormat, c.N, l)
		}
		seq, err := positiveInt(w[2])
		if err != nil {
			return c, fmt.Errorf("%w: checkpoint %d's head %q", ErrFormat, c.N, l)
		}
		c.Heads = append(c.Heads, Head{RunID: w[0], Gen: w[1], Seq: seq, Hash: w[3]})
	}
	if c.Text() != text {
		return c, fmt.Errorf("%w: checkpoint %d is not in its canonical form", ErrFormat, c.N)
	}
	c.Note = append([]byte(nil), msg...)
	return c, nil
}

// Open checks the checkpoint's note against verifiers (at least one must
// have signed it) and returns the checkpoint it holds.
func Open(msg []byte, verifiers note.Verifiers) (Checkpoint, error) {
	c, err := ParseCheckpoint(msg)
	if err != nil {
		return c, err
	}
	if _, err := note.Open(msg, verifiers); err != nil {
		return c, fmt.Errorf("audit: checkpoint %d: %w", c.N, err)
	}
	return c, nil
}

func positiveInt(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || strconv.FormatInt(v, 10) != s {
		return 0, fmt.Errorf("%q is not a positive integer", s)
	}
	return v, nil
}

func isHash(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == sha256.Size && hex.EncodeToString(b) == s
}

// MarshalCloudEvent returns the checkpoint as one CloudEvents JSON object
// of type io.github.toolcanon.audit.checkpoint, its data the note.
func (c *Checkpoint) MarshalCloudEvent() ([]byte, error) {
	data, err := jsonString(string(c.Note))
	if err != nil {
		return nil, err
	}
	return jsonMarshal(envelope{SpecVersion: specVersion, Type: CheckpointType, Source: Source(c.Origin), ID: c.ID(),
		Time: c.Time.UTC().Format(timeFormat), DataContentType: "text/plain", Data: data})
}

// GenerateKey returns a new Ed25519 signer key and its verifier key, in
// the note format ("PRIVATE+KEY+<name>+<hash>+<key>", "<name>+<hash>+<key>").
func GenerateKey(name string) (signer, verifier string, err error) {
	return note.GenerateKey(nil, name)
}
