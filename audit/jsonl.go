package audit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// DefaultJSONLMaxBytes is the size past which a JSONL sink starts a new
// file (JSONLOptions.MaxBytes).
const DefaultJSONLMaxBytes = 64 << 20

// MaxLineBytes bounds one line of a JSONL export, as readers take it.
const MaxLineBytes = 1 << 20

// JSONLOptions configure a JSONL sink.
type JSONLOptions struct {
	// MaxBytes: a file that has reached it is closed and the next batch
	// starts a new one (DefaultJSONLMaxBytes).
	MaxBytes int64
}

// JSONL is the embedded sink: CloudEvents JSON lines appended to files
// audit-000001.jsonl, audit-000002.jsonl, ... of one directory, a new file
// once one reaches MaxBytes, each batch's events followed by its
// checkpoint and fsynced (and the directory, when a file is new) before
// Write returns. One process writes a directory at a time (an exclusive
// lock on its .lock file).
//
// Opening a directory reads its last file: a batch cut short by a crash
// (lines after the last checkpoint, or a line cut in two) is cut off — it
// was never acknowledged, so the store delivers it again — and the events
// of the last two files are remembered, so that a batch delivered again
// adds only what the files lack. Old files are removed by the operator,
// whole, once past the retention (see the README).
type JSONL struct {
	dir  string
	max  int64
	lock *os.File

	mu    sync.Mutex
	f     *os.File
	num   int   // the current file's number
	size  int64 // its size
	seen  map[string]int64
	prior map[string]int64 // the previous file's
	last  *Checkpoint
}

var _ Sink = (*JSONL)(nil)

// fileName is the name of file number n.
func fileName(n int) string { return fmt.Sprintf("audit-%06d.jsonl", n) }

// JSONLFiles returns the export files of dir, in order.
func JSONLFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if _, ok := fileNumber(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

func fileNumber(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "audit-")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, ".jsonl")
	n, err := strconv.Atoi(s)
	if !ok || err != nil || n <= 0 || fileName(n) != name {
		return 0, false
	}
	return n, true
}

// OpenJSONL opens (creating it) the export directory dir.
func OpenJSONL(dir string, opts JSONLOptions) (*JSONL, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultJSONLMaxBytes
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	lock, err := lockFile(filepath.Join(dir, ".lock"))
	if err != nil {
		return nil, err
	}
	j := &JSONL{dir: dir, max: opts.MaxBytes, lock: lock, seen: map[string]int64{}, prior: map[string]int64{}}
	if err := j.recover(); err != nil {
		lock.Close()
		return nil, err
	}
	return j, nil
}

// recover reads the last two files: cuts the last one after its last
// checkpoint, and remembers their events and the last checkpoint.
func (j *JSONL) recover() error {
	files, err := JSONLFiles(j.dir)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return j.open(1)
	}
	if len(files) > 1 {
		if _, err := j.scan(files[len(files)-2], j.prior); err != nil {
			return err
		}
	}
	lastFile := files[len(files)-1]
	keep, err := j.scan(lastFile, j.seen)
	if err != nil {
		return err
	}
	if err := os.Truncate(lastFile, keep); err != nil {
		return err
	}
	n, _ := fileNumber(filepath.Base(lastFile))
	return j.open(n)
}

// scan reads a file's lines into seen and j.last, and returns the offset
// just after its last checkpoint. Events after it are not remembered.
func (j *JSONL) scan(path string, seen map[string]int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var off, keep int64
	pending := map[string]int64{}
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			off += int64(len(line))
			l, perr := ParseLine(bytes.TrimSuffix(line, []byte("\n")))
			if perr != nil {
				return 0, fmt.Errorf("audit: %s at byte %d: %w", path, off-int64(len(line)), perr)
			}
			if l.Event != nil {
				pending[streamKey(l.Event.RunID, l.Event.Gen)] = l.Event.Seq
			} else {
				for k, v := range pending {
					seen[k] = max(seen[k], v)
				}
				clear(pending)
				cp := *l.Checkpoint
				j.last, keep = &cp, off
			}
		}
		if err == io.EOF {
			return keep, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

func streamKey(run, gen string) string { return run + "/" + gen }

// open makes file number n the one written, appending.
func (j *JSONL) open(n int) error {
	path := filepath.Join(j.dir, fileName(n))
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if err := syncDir(j.dir); err != nil {
			f.Close()
			return err
		}
	}
	if j.f != nil {
		j.f.Close()
	}
	j.f, j.num, j.size = f, n, st.Size()
	return nil
}

// Write implements Sink.
func (j *JSONL) Write(ctx context.Context, events []Event, cp Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("audit: the JSONL sink is closed")
	}
	if j.size >= j.max {
		j.prior, j.seen = j.seen, map[string]int64{}
		if err := j.open(j.num + 1); err != nil {
			return err
		}
	}
	var b bytes.Buffer
	written := map[string]int64{}
	for i := range events {
		e := &events[i]
		k := streamKey(e.RunID, e.Gen)
		if e.Seq <= max(j.seen[k], j.prior[k], written[k]) {
			continue // held already: a batch delivered again
		}
		line, err := e.MarshalCloudEvent(cp.Origin)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
		written[k] = e.Seq
	}
	line, err := cp.MarshalCloudEvent()
	if err != nil {
		return err
	}
	b.Write(line)
	b.WriteByte('\n')
	n, err := j.f.Write(b.Bytes())
	j.size += int64(n)
	if err == nil {
		err = j.f.Sync()
	}
	if err != nil {
		// What was written is cut off at the next open; until then this
		// sink writes nothing more.
		j.f.Close()
		j.f = nil
		return fmt.Errorf("audit: write %s: %w", fileName(j.num), err)
	}
	for k, v := range written {
		j.seen[k] = v
	}
	j.last = &cp
	return nil
}

// LastCheckpoint implements Sink.
func (j *JSONL) LastCheckpoint(context.Context) (Checkpoint, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.last == nil {
		return Checkpoint{}, false, nil
	}
	return *j.last, true, nil
}

// Close closes the file and releases the directory.
func (j *JSONL) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	var err error
	if j.f != nil {
		err = j.f.Close()
		j.f = nil
	}
	return errors.Join(err, j.lock.Close())
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ReadJSONL reads the lines of an export, a file or a directory of files
// in order, handing each to fn with its place ("file:line"); it stops at
// the first line that does not parse, or that fn refuses.
func ReadJSONL(path string, fn func(at string, l Line) error) error {
	files := []string{path}
	if st, err := os.Stat(path); err != nil {
		return err
	} else if st.IsDir() {
		if files, err = JSONLFiles(path); err != nil {
			return err
		}
	}
	for _, name := range files {
		if err := readFile(name, fn); err != nil {
			return err
		}
	}
	return nil
}

func readFile(name string, fn func(at string, l Line) error) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	n := 0
	for sc.Scan() {
		n++
		at := fmt.Sprintf("%s:%d", filepath.Base(name), n)
		l, err := ParseLine(sc.Bytes())
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		if err := fn(at, l); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", filepath.Base(name), n+1, err)
	}
	return nil
}
