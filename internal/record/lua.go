package record

import (
	"fmt"
	"strings"
)

// LuaLib returns lua/format.lib: the constants of this layout that the
// scripts use, with Lua's 1-based positions, and the function that lists a
// payload's parts for HSET. internal/scripts_gen writes it; a test fails
// when the committed file differs.
func LuaLib() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("-- format.lib: the record's layout, generated from internal/record (record.go) by\n")
	w("-- internal/scripts_gen: DO NOT EDIT. Included by every script of a record.\n")
	w("--\n")
	w("-- A record is a HASH: field %q is the header, fixed-width ASCII fields at\n", HeaderField)
	w("-- fixed positions (below, 1-based as string.sub takes them), then the owner,\n")
	w("-- one space and the tool; each payload is the concatenation of its parts'\n")
	w("-- fields, cut in Go. A script compares the bytes it must and writes bytes\n")
	w("-- Go prepared; it never copies or cuts a payload.\n")
	for _, f := range Fields {
		w("local H_%s, H_%s_END = %d, %d -- %s\n", strings.ToUpper(f.Name), strings.ToUpper(f.Name), f.Off+1, f.Off+f.Len, f.Doc)
	}
	w("local H_OWNER = %d -- the owner, one space, the tool\n", OffOwner+1)
	w("local HEADER = %q\n", HeaderField)
	w("local INPUT_TOKEN, INPUT_STATE, CONSUMED = %q, %q, %q -- a record waiting for input: its token (CONSUMED and the token once taken), the tool's state\n",
		InputTokenField, InputStateField, ConsumedMark)
	w("local LAYOUT = %q -- the header's first byte\n", string(rune(Version)))
	w("local RUN_LAYOUT, RUN_LAYOUT_FIELD, RUN_GONE_FIELD = %q, %q, %q -- the run state's layout, the field that keeps it, its lost flag\n",
		RunLayout, RunLayoutField, RunGoneField)
	w("-- other_layout reports whether a run state read as run (state at\n")
	w("-- index state, the layout field at index layout) is another layout's.\n")
	w("local function other_layout(run, state, layout)\n")
	w("  return run[state] ~= false and run[state] ~= nil and run[layout] ~= RUN_LAYOUT\n")
	w("end\n")
	w("local PROJECTING, READY, ERROR = %q, %q, %q\n", string(rune(StatusProjecting)), string(rune(StatusReady)), string(rune(StatusError)))
	w("local NO_COMPLETION, ABANDON_MARK, CLAIM_LEN = %q, %q, %d -- the completion field: none yet; an abandonment's mark and claim\n",
		NoCompletion, AbandonMark, ClaimLen)
	w("local ABANDONED_HEAD, ABANDONED_TAIL = %q, %q -- an abandonment's bytes from H_STATUS to H_UPDATED, around its claim\n",
		abandonedHead, abandonedTail)
	w("local PARTS = %d\n", MaxParts)
	for _, p := range []struct {
		name   string
		fields []string
	}{{"REQUEST", RequestFields}, {"RAW", RawFields}, {"RESULT", ResultFields}} {
		w("local %s_PARTS = {'%s'}\n", p.name, strings.Join(p.fields, "', '"))
	}
	w("-- put appends to args the fields and values of the parts ARGV[first],\n")
	w("-- ... ARGV[first + PARTS - 1] that hold bytes, named names.\n")
	w("local function put(args, names, first)\n")
	w("  for i = 1, PARTS do\n")
	w("    local v = ARGV[first + i - 1]\n")
	w("    if v == '' then break end\n")
	w("    args[#args + 1] = names[i]\n")
	w("    args[#args + 1] = v\n")
	w("  end\n")
	w("end\n")
	return b.String()
}
