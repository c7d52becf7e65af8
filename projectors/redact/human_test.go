package redact

import "testing"

// A word only a person choosing a password writes is a secret wherever it
// stands, in a position that names nothing.
func TestHumanPasswordsWhereverTheyStand(t *testing.T) {
	expectRedacted(t, map[string]string{
		// A symbol no name holds, between or after letters and digits.
		"relay bound as mailer:Quokka?Granite27 ok":   "relay bound as mailer:<SECRET> ok",
		"./bin/kilnctl 14 2 Meadow42! --apply":        "./bin/kilnctl 14 2 <SECRET> --apply",
		"joined pool tern808? at 09:14":               "joined pool <SECRET> at 09:14",
		"slot 3 -> Marsh&Heron71":                     "slot 3 -> <SECRET>",
		"cfg=Kestrel904$ written":                     "cfg=<SECRET> written",
		"operator card: STUBBLmoor4! (expires never)": "operator card: <SECRET> (expires never)",
		// The most common passwords, alone or with a number.
		"./bin/doorctl 3 1 monkey77":             "./bin/doorctl 3 1 <SECRET>",
		"restored profile with Liverpool1986 ok": "restored profile with <SECRET> ok",
		"then typed letmein and got in":          "then typed <SECRET> and got in",
		// A date written as one word around a month's name.
		"login retry with 24September1979 denied": "login retry with <SECRET> denied",
		"./bin/vaultctl open april2011":           "./bin/vaultctl open <SECRET>",
		// Or after a month's abbreviation, with a day and a year.
		"badge reset with Feb141988 ok": "badge reset with <SECRET> ok",
		"kiosk pin Sep071999 set":       "kiosk pin <SECRET> set",
		// A mnemonic, wherever it stands.
		"wallet restored from: pilot hurry mango ridge fossil timber oyster clerk velvet absorb grape lunar": "wallet restored from: <SECRET>",
		`imported "orbit canvas mule deputy quiz thrive nephew salad ember crater vivid humble" ok`:          `imported "<SECRET>" ok`,
		// Words of up to ten letters, and a count that is no multiple of three.
		"restored: lantern quiver pinnacle marmalade cobalt thistle orchard pebble walrus gossamer fennel juniper ember": "restored: <SECRET>",
		// Words spelled with look-alike digits.
		"net use Q: \\\\files\\scans Wh1st3r.9 /persistent:no": "net use Q: \\\\files\\scans <SECRET> /persistent:no",
		"./bin/setkey 9 0 L4nt3rn2024":                         "./bin/setkey 9 0 <SECRET>",
		"arming with m0onbeam42 now":                           "arming with <SECRET> now",
		// Words of both cases joined, and digits.
		"bootstrap --seed Saddle.Thistle58": "bootstrap --seed <SECRET>",
		"relay 4 Harbour-Finch-6 ready":     "relay 4 <SECRET> ready",
		"chpw batch JUNCO_marsh_41 applied": "chpw batch <SECRET> applied",
		"relay 5 Falcon-Elk-2 armed":        "relay 5 <SECRET> armed",
		// One digit after three words that open with a capital.
		"relay 6 Copper-willow-heron4 ready": "relay 6 <SECRET> ready",
	})
	// Names, versions, members, ids, questions and variables are none.
	expectKept(t,
		"loaded log4j and neo4j on python3 (x86_64), bucket s3bucket, api v1p5beta1",
		"deploy kube-proxy-2 and core-dns-7 with release_notes_2024",
		"use math.MaxInt64, value.Int64, iter.Seq2 and tls.VersionTLS12 here",
		"Checksums-Sha1: listed below",
		"Is the digest SHA1? Or int64? Welcome to Web3! All done!",
		"commit eb4b4c2 and c0b3d71 merged",
		"set $erase$err$reading before the read",
		"Windows-Server is the host OS",
		"archive report_June2024.pdf from 2024-06-30, sprint March2 and Jul2024 done",
		"released Dec2019, sprint Jan2024, build Oct12, part Mar322001 and may12345",
		"opened Readonly-Mode7 and Hello-World2 and copper-willow-heron4",
		"events: attach, commit, copy, create, destroy, detach, die, exec, export, kill, pause, rename",
		"the daemon keeps every record until each worker has read it twice over fresh links",
		"replicas master1 and master2 took keys hello1, spring5 and SUMMER26; form field password2",
		"C# and F# tools, AT&T and R&D budgets, 100% done",
		"Thanks to @h4ckm0de and @qu1etstorm!",
	)
}
