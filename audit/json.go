package audit

import "encoding/json"

func jsonString(s string) (json.RawMessage, error) { return json.Marshal(s) }

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
