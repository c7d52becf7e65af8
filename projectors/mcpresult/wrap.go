package mcpresult

import (
	"cmp"
	"context"
	"slices"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors"
)

// maxInputFields bounds the fields of an input mapping.
const maxInputFields = 16

// wrapped runs another projector on the JSON of an MCP result.
type wrapped struct {
	inner  projectors.Projector
	fields []field // sorted by inner name
}

type field struct{ inner, arg string }

// Wrap returns a projector that runs inner on the JSON an MCP result
// carries (its structuredContent, or its one text block holding a JSON
// object or array) as inner's raw response. input builds the input inner
// expects from the call's arguments: each key is a field of inner's input,
// its value the name of the argument it is copied from; an argument the
// call lacks is left out. A nil input passes the call's input unchanged. A
// result that carries no JSON is PROJECTION_FAILED; an isError result is an
// error.
func Wrap(inner projectors.Projector, input map[string]string) (projectors.Projector, error) {
	if inner == nil {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "mcpresult: nil inner projector")
	}
	if len(input) > maxInputFields {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "mcpresult: %d input fields exceed %d", len(input), maxInputFields)
	}
	wr := &wrapped{inner: inner}
	for k, v := range input {
		if !plainName(k) || !plainName(v) {
			return nil, canonical.Errorf(canonical.CodeInvalidArgument, "mcpresult: input field %q from %q: names are 1-64 bytes of [A-Za-z0-9_.-]", k, v)
		}
		wr.fields = append(wr.fields, field{inner: k, arg: v})
	}
	slices.SortFunc(wr.fields, func(a, b field) int { return cmp.Compare(a.inner, b.inner) })
	return wr, nil
}

// Project implements projectors.Projector.
func (wr *wrapped) Project(ctx context.Context, call projectors.Call, raw []byte) (projectors.Projection, error) {
	pl, err := read(raw)
	if err != nil {
		return projectors.Projection{}, err
	}
	if pl.json == nil {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeProjectionFailed, "mcpresult: the result carries no JSON for the projector")
	}
	if wr.fields != nil {
		in, err := wr.input(call.Input)
		if err != nil {
			return projectors.Projection{}, err
		}
		call.Input = in
	}
	return wr.inner.Project(ctx, call, pl.json)
}

// input copies the mapped arguments of the call's input into a new object,
// value bytes unchanged.
func (wr *wrapped) input(args []byte) ([]byte, error) {
	if !projectors.Valid(args) {
		return nil, canonical.Errorf(canonical.CodeInvalidInput, "mcpresult: the call's input is not valid JSON")
	}
	out := append(make([]byte, 0, len(args)+64), '{')
	n := 0
	for _, f := range wr.fields {
		var val []byte
		if !projectors.EachMember(args, func(k, v []byte) bool {
			if projectors.KeyEquals(k, f.arg) {
				val = v
				return false
			}
			return true
		}) {
			return nil, canonical.Errorf(canonical.CodeInvalidInput, "mcpresult: the call's input is not an object")
		}
		if val == nil {
			continue
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, f.inner...)
		out = append(out, '"', ':')
		out = append(out, val...)
		n++
	}
	return append(out, '}'), nil
}

// plainName: 1 to 64 bytes of [A-Za-z0-9_.-], nothing that needs escaping.
func plainName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}
