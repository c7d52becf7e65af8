package record

import (
	"fmt"
	"strings"
)

// LuaLib returns lua/format.lib: the constants of this layout that the
// scripts use, with Lua's 1-based positions. It defines no table and no
// function, which every run of a script would make again.
// internal/scripts_gen writes it; a test fails when the committed file
// differs.
func LuaLib() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("-- format.lib: the record's and the run state's layout, generated from internal/record\n")
	w("-- (record.go) by internal/scripts_gen: DO NOT EDIT. Included by every script.\n")
	w("--\n")
	w("-- A record is a HASH: field %q is the header, fixed-width ASCII fields at\n", HeaderField)
	w("-- fixed positions (below, 1-based as string.sub takes them), then the owner,\n")
	w("-- one space, the tool and a newline, then the request when it is short;\n")
	w("-- each other payload is the concatenation of its parts' fields, cut in Go.\n")
	w("-- A script compares the bytes it must and writes bytes Go prepared; it\n")
	w("-- never cuts a payload.\n")
	for _, f := range Fields {
		w("local H_%s, H_%s_END = %d, %d -- %s\n", strings.ToUpper(f.Name), strings.ToUpper(f.Name), f.Off+1, f.Off+f.Len, f.Doc)
	}
	w("local H_OWNER = %d -- the owner, one space, the tool, a newline\n", OffOwner+1)
	w("local HEADER = %q\n", HeaderField)
	w("local INPUT_TOKEN, INPUT_STATE, CONSUMED = %q, %q, %q -- a record waiting for input: its token (CONSUMED and the token once taken), the tool's state\n",
		InputTokenField, InputStateField, ConsumedMark)
	w("local LAYOUT = %q -- the header's first byte\n", string(rune(Version)))
	w("-- The run state's layout (the start of the field that keeps it, whose\n")
	w("-- value goes on with a space and the run's packed limits), that field,\n")
	w("-- the field of the run's owner, generation and secret, and the state of a\n")
	w("-- run found lost.\n")
	w("local RUN_LAYOUT, RUN_LAYOUT_FIELD, RUN_IDENT_FIELD, RUN_LOST = %q, %q, %q, %q\n",
		RunLayout, RunLayoutField, RunIdentField, RunStateLost)
	w("local RUN_LAYOUT_LEN, LIMITS_AT, LIMITS_LEN = %d, %d, %d -- the packed limits start at LIMITS_AT of the layout field\n",
		len(RunLayout), len(RunLayout)+2, PackedLimitsLen)
	w("local PRINCIPAL_LEN, GEN_LEN = %d, %d -- the identity's owner, then its generation, then its secret\n", widthPrincipal, widthGen)
	w("local PROJECTING, READY, ERROR = %q, %q, %q\n", string(rune(StatusProjecting)), string(rune(StatusReady)), string(rune(StatusError)))
	w("local NO_COMPLETION, ABANDON_MARK, CLAIM_LEN = %q, %q, %d -- the completion field: none yet; an abandonment's mark and claim\n",
		NoCompletion, AbandonMark, ClaimLen)
	w("local ABANDONED_HEAD, ABANDONED_TAIL = %q, %q -- an abandonment's bytes from H_STATUS to H_UPDATED, around its claim\n",
		abandonedHead, abandonedTail)
	w("local OVERFLOW_HEAD, OVERFLOW_TAIL = %q, %q -- a completion refused for its size, around its digest\n",
		overflowHead, overflowTail)
	w("local REQ, REQ_2, REQ_3 = %q, %q, %q -- the request's parts, when it is not in the header's field\n",
		RequestFields[0], RequestFields[1], RequestFields[2])
	w("local RAW, RAW_2, RAW_3 = %q, %q, %q\n", RawFields[0], RawFields[1], RawFields[2])
	w("local RES, RES_2, RES_3 = %q, %q, %q\n", ResultFields[0], ResultFields[1], ResultFields[2])
	w("-- The string functions the scripts call most, as locals: a global's every\n")
	w("-- use is a lookup in the globals' table. (Commands stay redis.call, which\n")
	w("-- internal/scripts_gen checks for the keys they reach.)\n")
	w("local sub, len, find, format, tonumber = string.sub, string.len, string.find, string.format, tonumber\n")
	return b.String()
}
