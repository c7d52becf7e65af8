package redisstore

// DeclaredOutcomes returns, per script file, the outcomes its RETURNS
// declares.
func DeclaredOutcomes() map[string][]string { return declaredOutcomes }

// ScriptFiles maps the SHA1 of each lifecycle script to its file name.
func ScriptFiles() map[string]string {
	m := map[string]string{}
	for _, s := range allScripts {
		m[s.sha1] = s.file
	}
	return m
}
