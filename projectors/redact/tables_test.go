package redact

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Proofs read outside the table: hexadecimal with C's prefix reads as its
// digits, an algorithm joined to its digest by a slash (a public key's
// pin) proves it as a dash does (SRI), and the second of two values of one
// listing is proven by the first one's context, unless a credential's
// word stands between.
func TestProofsBesideTheTable(t *testing.T) {
	for _, c := range []struct{ kept, masked string }{
		{"fw 3.0.7 crc32=0x72CBC1A7 size=1048576", "fw 3.0.7 pin=0x72CBC1A7 size=1048576"},
		{"TLS pin sha256/sXdwVs3F0eXV4t8QA2BhaWcAfDDAtSZe8IffxaMFiWc=", "TLS pin sha257/sXdwVs3F0eXV4t8QA2BhaWcAfDDAtSZe8IffxaMFiWc="},
		{"curl --pinnedpubkey sha256//sXdwVs3F0eXV4t8QA2BhaWcAfDDAtSZe8IffxaMFiWc= https://api.example.com", "curl --pinnedpubkey sha256//1B2M2Y8AsgTpgAmY7PhCfg== https://api.example.com"},
		{"Merged ba7add2d4ad83ef2f25ac00089322117abd465b2 into 92f64d707aee28f8f95e65d9cf45b559b14ca24d",
			"Merged ba7add2d4ad83ef2f25ac00089322117abd465b2 with key 92f64d707aee28f8f95e65d9cf45b559b14ca24d"},
		{"hash chain prev=87b7acd2f354663d999f1431ae364f473819285844de3cb034c66748b4bfdc86 this=e8dd05b1adc5b8482b651be3a70ed9ce31ea6a49a92818bef471531ae4ede8da",
			"hash chain prev=87b7acd2f354663d999f1431ae364f473819285844de3cb034c66748b4bfdc86 token=e8dd05b1adc5b8482b651be3a70ed9ce31ea6a49a92818bef471531ae4ede8da"},
		{"commit ba7add2d4ad83ef2f25ac00089322117abd465b2 parent 92f64d707aee28f8f95e65d9cf45b559b14ca24d",
			"commit ba7add2d4ad83ef2f25ac00089322117abd465b2 parent 92f64d707aee28f8f95e65d9cf45b559b14ca24d2b1c"},
		{"commit ba7add2d4ad83ef2f25ac00089322117abd465b2 parent 92f64d707aee28f8f95e65d9cf45b559b14ca24d",
			"commit ba7add2d4ad83ef2f25ac00089322117abd465b2 and then, much later on, 92f64d707aee28f8f95e65d9cf45b559b14ca24d"},
	} {
		if got := String(c.kept); got != c.kept {
			t.Errorf("%q\n changed to %q", c.kept, got)
		}
		if got := String(c.masked); got == c.masked {
			t.Errorf("%q kept", c.masked)
		}
	}
}

// Each proof, entry by entry: a value of its shape is kept in its context
// and masked in another, and a value of another shape is masked in it.
func TestProofsEntryByEntry(t *testing.T) {
	cases := map[string][]struct{ kept, masked string }{
		"digest after its algorithm's name": {
			{"image sha256:0d5c2ab4f3e8b1a9c7d6e5f40312a1b2c3d4e5f60718293a4b5c6d7e8f901234", "image 0d5c2ab4f3e8b1a9c7d6e5f40312a1b2c3d4e5f60718293a4b5c6d7e8f901234"},
			{"SHA256 (app-1.2.tar.gz) = 0D5C2AB4F3E8B1A9C7D6E5F40312A1B2C3D4E5F60718293A4B5C6D7E8F901234", "SHA256 (app-1.2.tar.gz) = 0D5C2AB4F3E8B1A9C7D6E5F40312A1B2C3D4E5F60718293A"},
			{"SHA2-256(kannel.conf)= 0d5c2ab4f3e8b1a9c7d6e5f40312a1b2c3d4e5f60718293a4b5c6d7e8f901234", "SHA2-512(kannel.conf)= 0d5c2ab4f3e8b1a9c7d6e5f40312a1b2c3d4e5f60718293a4b5c6d7e8f901234"},
			{"x-amz-checksum-sha256: FfNC35yRiMu784hlVY4LKaxkQ7heaaxJ823UuXLPaMA=", "x-amz-meta-sha1: FfNC35yRiMu784hlVY4LKaxkQ7heaaxJ823UuXLPaMA="},
			{"Content-MD5: 1B2M2Y8AsgTpgAmY7PhCfg==", "Content-Type: 1B2M2Y8AsgTpgAmY7PhCfg=="},
			{"Digest: sha-256=OatWF3PpNGqEBZr/cLOJ5GoyJG8WSO8YxmNDeWPpObw=", "Digest: sha-256 token=OatWF3PpNGqEBZr/cLOJ5GoyJG8WSO8YxmNDeWPpObw="},
			{"x-goog-hash: crc32c=PSO+fw==, md5=/WFU9KLt8E3N/Ke+X8CRXQ==", "x-goog-meta: crc32c=PSO+fw==, sum=/WFU9KLt8E3N/Ke+X8CRXQ=="},
			{"integrity=sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC", "integrity=sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4Jw"},
			{"fingerprint is SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8.", "key is SHA1:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8."},
			{"256 SHA256:3zqtSt6RvKhP6OuRWtEWM5ZiNM2Ug3oNi0fp6kBOYHM ops@build-runner (ED25519)", "256 SHA256:3zqtSt6RvKhP6OuRWtEWM5ZiNM2Ug3oNi0fp6kBOYHM note ops@build-runner (ED25519)"},
			// A keyed digest is a signature: hmac before the algorithm voids the proof.
			{"b3sum: a8184e21765c49f767c29c7cab6f637b4137e4eb88f87e2d3432a2aaa48a69c9  firebird.tar.gz", "x-shop-hmac-sha256: S+voL7dc6BCZQ+kkp9+GCDCKxkT4DOuIw29PLEQaVZ4="},
			// A folded line continues the field above it; a line that is not
			// folded does not.
			{`Checksums-Sha1:\n c9e30a3937e177c602dad9befaaea328e6a0c012 21442 tac-plus.dsc`, `Checksums-Sha1:\nc9e30a3937e177c602dad9befaaea328e6a0c012 tac-plus.dsc`},
		},
		"checksum or digest named": {
			{`ETag: "e474def8bcb216f0ed162edf06727c54"`, `X-Request: "e474def8bcb216f0ed162edf06727c54"`},
			{"x/net v0.25.0 h1:d/OCCoBEUq33pjydKrGQhw7IlUPI2Oylr+8qLx49kac=", "x/net v0.25.0 h2:d/OCCoBEUq33pjydKrGQhw7IlUPI2Oylr+8qLx49kac="},
			// A credential's hash is no public digest.
			{`<setting name="file.hash" value="b46c94aff258ce69ca2b3d8ec967316cd6a1ba5edb73b0055e7f95100ac0478c"/>`, `<setting name="admin.password.hash" value="b46c94aff258ce69ca2b3d8ec967316cd6a1ba5edb73b0055e7f95100ac0478c"/>`},
		},
		"checksum, size and file of a package index": {{" 9b2f3c1d4e5a6b7c8d9e0f1a2b3c4d5e 51873 main/binary-arm64/Packages", " 9b2f3c1d4e5a6b7c8d9e0f1a2b3c4d5e 51873"}},
		"checksum after a package's file name": {
			{"relay-agent-5.1.0.exe  9569c89a7b8c85d15e0eb98ad4db54ecc901d3777aa4471328593dba6b85593d", "relay-agent-5.1.0 token 9569c89a7b8c85d15e0eb98ad4db54ecc901d3777aa4471328593dba6b85593d"},
			// A digest in hexadecimal only: a blob the key "zip" holds is no checksum.
			{"agent-setup.msi  1f3870be274f6c49b3e31a0c6728957f", `{"zip":"UrzESqt4xbsNmfmYXBvma0wBabqh4OgoeGlT0/W7++52wcOAl+fbzxFOENydVxB8"}`},
		},
		"checksum after its algorithm's name": {{"firmware LW-2.4.1 crc32=73c0cd31 size=1048576", "firmware LW-2.4.1 pin=73c0cd31 size=1048576"}},
		"checksum after an archive's name":    {{`resolved "https://registry.yarnpkg.com/jason/-/jason-1.4.1.tgz#906538f108cd2591a1643b7948d70fbe5f0fd018"`, `resolved "https://registry.yarnpkg.com/jason/-/jason-1.4.1.tgz/x/906538f108cd2591a1643b7948d70fbe5f0fd018"`}},
		"checksum of a mix.lock entry":        {{`"jason": {:hex, :jason, "1.4.4", "513544b081290ba6ac550b416547d711b0f36f149f9fc2d05734b27e8f30e000", [:mix], [], "hexpm", "aaad4897090627d7cfa9f767a8577adb8e20911d67d5cf54615510c91249eee2"},`, `"api_key_hex": "513544b081290ba6ac550b416547d711b0f36f149f9fc2d05734b27e8f30e000"`}},
		"checksum file line":                  {{"ce257ad4f2b57f63d654f75852777dc278aaf6301d1a619588096b35bc4986e1  app-5.8.3-debian12-amd64.deb", "ce257ad4f2b57f63d654f75852777dc278aaf6301d1a619588096b35bc4986e1 app.tar.gz"}},
		"commit in a git context": {
			{"commit 28efa20124d6d003a6630d95495d395dc3289858", "token 28efa20124d6d003a6630d95495d395dc3289858"},
			{"HEAD is now at 9132b5958b11 fix", "head token is at 9132b5958b11 fix"},
			{"object e4be9b4cefbc6271caaf49e1e3a8d078b85a30b2", "objects e4be9b4cefbc6271caaf49e1e3a8d078b85a30b2"},
			{`Fixes: f83a88142a25 ("net: fix leak")`, `Token: f83a88142a25 ("net: fix leak")`},
			{"- uses: actions/checkout@d92c11494c2b7839ff4753a6a07ec33ab1096bc4 # v4.2.2", "- run: deploy d92c11494c2b7839ff4753a6a07ec33ab1096bc4 # v4.2.2"},
			{"Successfully rebased and updated refs/heads/feature onto 96000c4920ca3e56ae2fccfc1729c4200e4f5343.", "Successfully uploaded to 96000c4920ca3e56ae2fccfc1729c4200e4f5343."},
			{" 9 files changed, 46 insertions(+), 7 deletions(-) at e83051ded613fc88561d49ebaaa762378f2507c8", " 9 files uploaded at e83051ded613fc88561d49ebaaa762378f2507c8"},
		},
		"build a version names": {
			{"relay 2.1.0 (build 5c03e9ab71d2, 2026-11-30)", "relay 2.1.0 (token 5c03e9ab71d2, 2026-11-30)"},
			{"agent 6.0.3 build 7ac1f9d24be08d3c55e6b7a0f1d2c3b4a5968778", "agent 6.0.3 built with key 7ac1f9d24be08d3c55e6b7a0f1d2c3b4a5968778"},
		},
		"checksum line echoed to its checker": {{`echo "3f7a9c1e5b2d4f6a8c0e1b3d5f7a9c1e5b2d4f6a8c0e1b3d5f7a9c1e5b2d4f6a  relay.tar.gz" | sha256sum -c`,
			`echo "3f7a9c1e5b2d4f6a8c0e1b3d5f7a9c1e5b2d4f6a8c0e1b3d5f7a9c1e5b2d4f6a  relay.tar.gz" | tee sums`}},
		"key id of a signature":                            {{"release 4.2 (signed with key 9B1C4E7A02D35F68)", "release 4.2 (api key 9B1C4E7A02D35F68)"}},
		"abbreviated commit starting a one-line log entry": {{"b82b424c7 Merge pull request #7 from team/fix-x", "token b82b424c7 Merge pull request #7"}},
		"trace state a vendor propagates": {
			{"tracestate: congo=t61rcWkgMzE,rojo=00f067aa0ba902b7", "statestore: congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"},
			{"tracestate: vnd=Qm3xZ9pT2k", "state: vnd=Qm3xZ9pT2k"},
		},
		"commit before its ref": {{"1f8fa1d7c8eb9c7cf8ba1c6cbb52440483259735 refs/tags/v1.9.4", "1f8fa1d7c8eb9c7cf8ba1c6cbb52440483259735 tags/v1.9.4"}},
		"git range, describe name or Go pseudo-version": {
			{"index 2dab6e7a11..6c9f136b22 100644", "token 2dab6e7a11.6c9f136b22 100644"},
			{"v1.9.4-14-gb48b6fb2c41", "v1.9.4-14-xb48b6fb2c41"},
			{"diff 2dab6e7a11...6c9f136b22 shown", "diff 2dab6e7a11....6c9f136b22 shown"},
		},
		"key id or fingerprint": {
			{"gpg: using RSA key 4AEE18F83AFDEB23", "gpg: using the token 4AEE18F83AFDEB23"},
			{"gpg: Signature made Sun 06 Dec 2026 using RSA key ID 5B7E20C4", "gpg: upload made using the token 5B7E20C4"},
			{"pub   ed25519/217417CFE32FE7D6 2026-01-14 [SC]", "pub   ed25519 217417CFE32FE7D6b 2026-01-14 [SC]"},
			{"fpr:::::::::8C16EEC2957BA9F86486BE07C71A68DA9C2FD016:", "fp:::::::::8C16EEC2957BA9F86486BE07C71A68DA9C2FD016:"},
		},
		"key id a gpg status line names": {{`gpg: Good signature from "Release Team" key 5303C80FCFAE483C`, `Good signature from "Release Team" key 5303C80FCFAE483C`}},
		"signature in its OpenPGP armour": {{`-----BEGIN PGP SIGNATURE-----\nComment: release 5.1.0\n\niHUEABYKAB0WIQapHP9XQMWmcVzMrYBifsmX4VE9qdCizhJ/ivC+VR`,
			`-----BEGIN PGP MESSAGE-----\nComment: release 5.1.0\n\niHUEABYKAB0WIQapHP9XQMWmcVzMrYBifsmX4VE9qdCizhJ/ivC+VR`}},
		"public key or fingerprint in its OpenPGP armour": {{"-----BEGIN PGP PUBLIC KEY BLOCK----- Version: relay-release D0B26D036323ADC90212694F45ACBD949FE3935D",
			"-----BEGIN PGP PRIVATE KEY BLOCK----- Version: relay-release D0B26D036323ADC90212694F45ACBD949FE3935D"}},
		"content-addressed path": {{"packages/8a/ea/19f9ad283fe0a3a3e28580a12d3e1db637519141284019db9bb7a6755bfb/mlflow.whl", "packages/8a/ea/19f9ad283fe0a3a3e28580a12d3e1db637519141284019db9bb7a6755bf/mlflow.whl"}},
		"ssh public key":         {{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq7Lm2vK9tR4xW1nB8yC3dF6hJ0sG5aE2uQ ops@build-runner", "ssh-ed25519 QUFBQUMzTnphQzFsWkRJMU5URTVBQUFBSUhxN0xtMnZLOXRSNHhXMW5COHlD"}},
		"trace context": {
			{"traceparent: 00-b6403f3d9cf02eb7ba30357967f196ce-7f3a9c2e1b4d6058-01", "trace: 01-b6403f3d9cf02eb7ba30357967f196ce-7f3a9c2e1b4d6058-01"},
			{"trace_id=e5ab768873f4f88e5690e80b0c4824c5", "request_id=e5ab768873f4f88e5690e80b0c4824c5"},
			{`"spanId":"7f3a9c2e1b4d6058"`, `"nonce":"7f3a9c2e1b4d6058"`},
			{"X-B3-TraceId: d9b720aaf9d3933f7b143827e5c6655a", "X-Request-Id: d9b720aaf9d3933f7b143827e5c6655a"},
			{"b3: 7dafb03ac199aba9918c7535ca187fab-9d961b0a2efe15a4-1", "b3: 7dafb03ac199aba9918c7535ca187fab-9d961b0a2efe15a4-1-2-3"},
			{"b3: 60754930cc7a033fce132605e1044985-e049ccb75804be13-1-73f90f672216768d", "b3: 60754930cc7a033fce132605e1044985-e049ccb75804be13-1-73f90f672216768"},
			{"X-Cloud-Trace-Context: 04e0b0d18e4c1012f1abbe4ec2eb4203/1223728822541981490;o=1", "X-Cloud-Context: 04e0b0d18e4c1012f1abbe4ec2eb4203/1223728822541981490;o=1"},
		},
		"public key named": {
			{"PublicKey = +bSlf6HDjKP2HDWpncWCFEQjE4f0oSvtK578UmgRRBE=", "PrivateKey = +bSlf6HDjKP2HDWpncWCFEQjE4f0oSvtK578UmgRRBE="},
			{"<key>SUPublicEDKey</key><string>ecr+hi8h0fxsPqXwTNbIYBwE4q3IRr6AOEDKHN/Ovws=</string>", "<key>SUPrivateEDKey</key><string>ecr+hi8h0fxsPqXwTNbIYBwE4q3IRr6AOEDKHN/Ovws=</string>"},
		},
		"JSON web key's public member": {{`{"kty":"EC","crv":"P-256","x":"NFtcoy6l6LCROsUxNH1NS0_rNQFEGMXcdWr_99YCBtQ"}`, `{"crv":"P-256","x":"NFtcoy6l6LCROsUxNH1NS0_rNQFEGMXcdWr_99YCBtQ"}`}},
		"signature tool's public key":  {{"minisign -Vm app.zip -P RWRBdnw8iNCdVy+A/C6F/WEIV3rcDI4zN5dW/ZzAVhupSmqLFnkRLy8V", "unzip -Vm app.zip -P RWRBdnw8iNCdVy+A/C6F/WEIV3rcDI4zN5dW/ZzAVhupSmqLFnkRLy8V"}},
		"age recipient":                {{"age: age1wzqal2h74atj72fvu7gsg8kqacjr2lkg4aqua9qnujc4l393drc3nqe66d", "age: age1wzqal2h74atj72fvu7gsg8kqacjr2lkg4aqua9qnujc4l393drc3nqe66"}},
		"digest a DNS record holds": {
			{"example.org. 3600 IN DS 2371 13 2 8FE74307D97A0290E7EC86B960B976C3ED21794B17132321FE0C09EACFA333EC", "example.org. 3600 IN TXT 2371 13 2 8FE74307D97A0290E7EC86B960B976C3ED21794B17132321FE0C09EACFA333EC"},
			{"_443._tcp.relay.example.org. IN TLSA 3 1 1 834f0e2ef4cf37b44e6049d3774ca84c83030e6b75117257e6f1ea2c3f5601cf", "_443._tcp.relay.example.org. IN TLSA 3 1 1 834f0e2ef4cf37b44e6049d3774ca84c83030e6b75117257e6f1ea2c3"},
			{"relay.example.org. IN SSHFP 4 2 2f0244061820712aca39cbfa69db91de8d8a333a16285cee1711dd93e72a4f01", "relay.example.org. IN SSH 4 2 2f0244061820712aca39cbfa69db91de8d8a333a16285cee1711dd93e72a4f01"},
		},
		"public key a DNS record holds": {{"example.org. 3600 IN DNSKEY 257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==",
			"example.org. 3600 IN KEYSTORE 257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ=="}},
		"certificate thumbprint": {{"Certificate thumbprint: 7C9BE57B2A708189A078443FC28DAFDC8E64F369", "Certificate password: 7C9BE57B2A708189A078443FC28DAFDC8E64F369"}},
		"key id or thumbprint of a JSON web key": {
			{`"kid": "Xxtn7FMVl4JPSlyKuQKnXKxriTGSwdspcRPQB41eu3o"`, `"sid": "Xxtn7FMVl4JPSlyKuQKnXKxriTGSwdspcRPQB41eu3o"`},
			{"x5t#S256: t2_HBkY__2Kfsa9ddBlKQ0b9jfQ0ja6sFDo70kP2vj0", "x5c#S256: t2_HBkY__2Kfsa9ddBlKQ0b9jfQ0ja6sFDo70kP2vj0"},
		},
		"BitTorrent info hash":              {{"magnet:?xt=urn:btih:f4bcef488ad4307c7e5c6a0bf79bfd797f72daa6&dn=image.iso", "magnet:?xt=urn:sess:f4bcef488ad4307c7e5c6a0bf79bfd797f72daa6&dn=image.iso"}},
		"transaction id of a public ledger": {{"txid: f2fea4e2bfdbcfddd1355817aca895a601c86db4ec36baaba0cdf2d5095c7d7a", "privkey: f2fea4e2bfdbcfddd1355817aca895a601c86db4ec36baaba0cdf2d5095c7d7a"}},
		"signature tool's key id":           {{"untrusted comment: minisign public key 597C07CA635F1346", "untrusted comment: minisign secret key 597C07CA635F1346"}},
		"PKCE code challenge": {{"code_challenge=SadBJU-woX0IMhgstQZnGGyOy1OmmPkbvXypyKD5OPg&code_challenge_method=S256",
			"code_verifier=SadBJU-woX0IMhgstQZnGGyOy1OmmPkbvXypyKD5OPg&code_challenge_method=S256"}},
		"Gerrit change id":           {{"Change-Id: I5d36d362de31578cff5cf78d5abe5886d4a44370", "Session-Id: I5d36d362de31578cff5cf78d5abe5886d4a44370"}},
		"AWS X-Ray trace id":         {{"X-Amzn-Trace-Id: Root=1-0133def2-6a984218707924c61d2e4227", "X-Amzn-Trace-Id: Root=1-0133def2-6a984218707924c61d2e422"}},
		"image id docker names":      {{"Successfully built 640f6a10fe6f", "Successfully sent 640f6a10fe6f"}},
		"ETag of a multipart upload": {{`ETag: "828d2c3f7d72dfe7472676b4b8cd01e8-3"`, `X-Token: "828d2c3f7d72dfe7472676b4b8cd01e8-3"`}},
		"Nostr public key":           {{"npub1p7xsxzkw5jvcr7ys9wl66j7hh4mtqyuehspgj94dwppsc7u7wevnx6yrng", "nsec1p7xsxzkw5jvcr7ys9wl66j7hh4mtqyuehspgj94dwppsc7u7wevnx6yrng"}},
		"Nix store path":             {{"/nix/store/ncn5zbmvf411bb368pgg01isb2qj1k1w-duckdb-1.1.3", "/opt/store/ncn5zbmvf411bb368pgg01isb2qj1k1w-duckdb-1.1.3"}},
		"commit git bisect names": {
			{"40b4377b694152d58e22a59881bb710d76a54002 is the first bad commit", "40b4377b694152d58e22a59881bb710d76a54002 is the first bad token"},
			{"[220b1f319b49d96d226a8c9f6c27e7f41a629898] app: pin to 2.1.0", "note [220b1f319b49d96d226a8c9f6c27e7f41a629898] app: pin to 2.1.0"},
		},
		"fingerprint line of a gpg listing": {{"      58A8B74C9AEFACCF0829D5A8328A3CECA6E64026", "      58a8b74c9aefaccf0829d5a8328a3ceca6e64026"}},
		"signature line of a gpg listing":   {{"sig 3        47FB44BB9D2F835D 2026-11-30  Release Key", "sig=47fb44bb9d2f835d&expires=1"}},
		"WireGuard peer":                    {{"peer: 8d8/pSiJ8be3BhC2JMUugSk7Yml1SW/wsdlWLR9HEAA=", "peer_token: 8d8/pSiJ8be3BhC2JMUugSk7Yml1SW/wsdlWLR9HEAA="}},
		"GitHub security advisory id":       {{"fixed in v1.4.2 (GHSA-5wrp-cwcj-q835)", "fixed in v1.4.2 (GHSB-5wrp-cwcj-q835)"}},
		"image layer docker names":          {{"2d8ddbe0ad46: Pull complete", "2d8ddbe0ad46: Ready"}},
		"commit git rev-parse or rev-list prints on its own line": {
			{"$ git rev-parse HEAD\n5e0c1f7a9b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e\n", "$ git rev-parse HEAD\ntoken 5e0c1f7a9b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e\n"},
			{`{"cmd":"git rev-list -n1 main","out":"\n5e0c1f7a9b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e\n"}`, `{"cmd":"git log -n1 main","out":"\n5e0c1f7a9b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e\n"}`},
		},
	}
	for _, p := range proofsTable {
		cs, ok := cases[p.name]
		if !ok {
			t.Errorf("proof %q has no test", p.name)
			continue
		}
		for _, c := range cs {
			if got := String(c.kept); got != c.kept {
				t.Errorf("%s: %q\n changed to %q", p.name, c.kept, got)
			}
			if got := String(c.masked); got == c.masked {
				t.Errorf("%s: %q kept, out of its context or shape", p.name, c.masked)
			}
		}
		delete(cases, p.name)
	}
	for name := range cases {
		t.Errorf("a case for %q, which is no proof", name)
	}
}

// Each credential word names a credential in a key, whatever words
// surround it; a setting word after it makes the key a setting; "key"
// names one after each of its qualifiers.
func TestCredentialWordsEntryByEntry(t *testing.T) {
	for _, w := range slices.Sorted(maps.Keys(credentialWords)) {
		keys := []string{w, "admin_" + w, "x-" + w, "db." + w}
		if strings.IndexFunc(w, func(r rune) bool { return r >= 0x80 }) < 0 {
			keys = append(keys, strings.ToUpper(w)+"_VALUE")
		}
		for _, key := range keys {
			if c := classifyKey([]byte(key)); c != kvSecret && c != kvCookie {
				t.Errorf("%q (word %q): class %d, not a credential", key, w, c)
			}
		}
		if got := String(w + "=Zq9v!k2LmP next"); !strings.HasPrefix(got, w+"=<SECRET>") {
			t.Errorf("%q", got)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(settingWords)) {
		for _, key := range []string{"password_" + s, "token-" + s, "keyStore" + strings.ToUpper(s[:1]) + s[1:]} {
			if c := classifyKey([]byte(key)); c != kvNone {
				t.Errorf("%q (setting word %q): class %d", key, s, c)
			}
		}
		// Before the credential word, a setting word qualifies it; a word
		// that counts or bounds makes a setting wherever it stands.
		want := kvSecret
		if boundWords[s] {
			want = kvNone
		}
		for _, key := range []string{s + "_secret", s + "StorePassword2"} {
			if c := classifyKey([]byte(key)); c != want {
				t.Errorf("%q (setting word %q): class %d, want %d", key, s, c, want)
			}
		}
	}
	for _, noun := range slices.Sorted(maps.Keys(qualifiedNouns)) {
		for _, q := range slices.Sorted(maps.Keys(qualifiedNouns[noun])) {
			for _, key := range []string{q + "_" + noun, q + strings.ToUpper(noun[:1]) + noun[1:], "x-" + q + "-db-" + noun, q + "_things." + noun} {
				if c := classifyKey([]byte(key)); c != kvSecret {
					t.Errorf("%q (qualifier %q of %q): class %d", key, q, noun, c)
				}
			}
		}
		// Alone, or after another word, a noun names no credential
		// (but "key" alone does; and a code is a secret unless a word of
		// prose, a setting or a public code names it).
		if c := classifyKey([]byte("error_" + noun)); c != kvNone {
			t.Errorf("error_%s: class %d", noun, c)
		}
	}
	// Substrings never count: these hold a setting or a credential word
	// only inside other words.
	for key, want := range map[string]kvClass{"admin_password": kvSecret, "minimum_password": kvSecret, "maxed_token": kvSecret,
		"bypass": kvNone, "compass_reading": kvNone, "tokenizer": kvNone, "secretary": kvNone, "partition_key": kvNone, "monkey": kvNone} {
		if c := classifyKey([]byte(key)); c != want {
			t.Errorf("%q: class %d, want %d", key, c, want)
		}
	}
}

// Each hasher masks the password it is given, past the flags that take
// another value.
func TestHashersEntryByEntry(t *testing.T) {
	examples := map[string]string{
		"passwd":        "openssl passwd -6 -salt Qx7 Zq9v!k2LmP",
		"mkpasswd":      "mkpasswd --method=sha-512 -R 5000 Zq9v!k2LmP",
		"slappasswd":    "slappasswd -h {SSHA} -s Zq9v!k2LmP",
		"hash-password": "caddy hash-password --algorithm bcrypt --plaintext=Zq9v!k2LmP",
		"pw":            "doveadm pw -s SHA512-CRYPT -p Zq9v!k2LmP",
	}
	eachExample(t, "hasher", slices.Sorted(maps.Keys(hashers)), examples, "Zq9v!k2LmP")
}

// eachExample checks that every entry of a table (what) has an example,
// and that the redacted example holds a <SECRET> and none of leaks.
func eachExample(t *testing.T, what string, entries []string, examples map[string]string, leaks ...string) {
	t.Helper()
	for _, c := range entries {
		ex, ok := examples[c]
		if !ok {
			t.Errorf("%s %q has no example", what, c)
			continue
		}
		got := String(ex)
		if slices.ContainsFunc(leaks, func(l string) bool { return strings.Contains(got, l) }) || !strings.Contains(got, "<SECRET>") {
			t.Errorf("%s: %q -> %q", c, ex, got)
		}
	}
}

// Each account verb masks the account and password after it.
func TestAccountVerbsEntryByEntry(t *testing.T) {
	examples := map[string]string{
		"add_user":         "rabbitmqctl add_user jdoe Zq9v!k2LmP",
		"adduser":          "mosquitto adduser jdoe Zq9v!k2LmP",
		"change_password":  "rabbitmqctl change_password jdoe Zq9v!k2LmP",
		"set_password":     "app set_password jdoe tiger",
		"isql":             "isql -v MyDSN jdoe Zq9v!k2LmP",
		"http-basic":       "poetry config http-basic.repo jdoe Zq9v!k2LmP",
		"net":              "net user jdoe Zq9v!k2LmP /add",
		"htpasswd":         "htpasswd -b -c /etc/nginx/.htpasswd jdoe Zq9v!k2LmP",
		"login":            "steamcmd +login jdoe Zq9v!k2LmP +quit",
		"logon":            "client logon jdoe Zq9v!k2LmP",
		"signin":           "cli signin jdoe Zq9v!k2LmP",
		"passwd":           "./bin/emqx ctl admins passwd jdoe Zq9v!k2LmP",
		"password":         "drush user:password jdoe 'Zq9v!k2LmP'",
		"auth":             "doveadm auth test jdoe Zq9v!k2LmP",
		"superuser":        "./pocketbase superuser upsert jdoe@example.com Zq9v!k2LmP",
		"register":         "xo-cli register --au https://xo.example jdoe@example.com Zq9v!k2LmP",
		"user-create":      "chef-server-ctl user-create jdoe 'Zq9v!k2LmP' --filename x.pem",
		"useradd":          "appctl useradd jdoe Zq9v!k2LmP",
		"mosquitto_passwd": "mosquitto_passwd -b /etc/mosquitto/passwd jdoe Zq9v!k2LmP",
	}
	eachExample(t, "account verb", slices.Sorted(maps.Keys(accountVerbs)), examples, "jdoe", "Zq9v!k2LmP", "tiger")
	for _, ordinary := range []string{"htpasswd -c /etc/nginx/.htpasswd jdoe", "login failed for user root from 10.0.0.1",
		"password expired for alice yesterday", "auth failure for alice: bad input", "net profit 1234abc",
		"connect to db01 timeout 30s", "register service checkout-api v2", "add route via gw-2 table main",
		"the net.Conn interface used for testing", "retry net.ErrClosed errors by default.",
		"the probe failed to register with Prometheus (#42)", "auth reply handler (called from the loop)",
		"expected a password reply, got %q", "shifted register offset, scale = 0"} {
		if got := String(ordinary); strings.Contains(got, "<SECRET>") {
			t.Errorf("%q -> %q", ordinary, got)
		}
	}
}

// Each form of call passes its credential.
func TestCalls(t *testing.T) {
	expectRedacted(t, map[string]string{
		"define( 'DB_PASSWORD', 'rustic_zephyr3!' );":                                  "define( 'DB_PASSWORD', '<SECRET>' );",
		`System.setProperty("DISCORD_TOKEN", "414148813964170807")`:                    `System.setProperty("DISCORD_TOKEN", "<SECRET>")`,
		"client.setKey('standard_85c65ae0b7').setProject('nw-shop');":                  "client.setKey('<SECRET>').setProject('nw-shop');",
		`Parse.User.logIn("frontdesk", "secret28").then(onLogin)`:                      `Parse.User.logIn("<USER>", "<SECRET>").then(onLogin)`,
		`auth=trino.auth.BasicAuthentication("etl", "lantern-cedar-552")`:              `auth=trino.auth.BasicAuthentication("<USER>", "<SECRET>")`,
		"PDO->__construct('mysql:host=mysql;dbname=shop', 'shop', 'Midnight7', Array)": "PDO->__construct('mysql:host=<HOST>;dbname=shop', '<USER>', '<SECRET>', Array)",
		"mysqli_connect('localhost', 'shop', 'Midnight7')":                             "mysqli_connect('localhost', '<USER>', '<SECRET>')",
		`log.Printf("user %s logged in", "bob")`:                                       `log.Printf("user %s logged in", "bob")`,
		`getPassword("alice")`:                                                         `getPassword("alice")`,
	})
}

// Each vendor prefix makes a value a secret wherever it stands, even in a
// position that would prove a digest public; too short a rest does not.
func TestVendorPrefixesEntryByEntry(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, v := range vendorPrefixes {
		alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
		if v.hex {
			alphabet = "0123456789abcdef"
		}
		if v.p[0] == 'A' && len(v.p) == 4 && v.p != "AIza" {
			alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
		}
		rest := make([]byte, v.rest+4)
		for i := range rest {
			rest[i] = alphabet[r.IntN(len(alphabet))]
		}
		value := v.p + string(rest)
		for _, line := range []string{"using " + value + " now", "sha256:" + value} {
			rw := &rewriter{src: []byte(line)}
			redactGenerated(rw)
			if len(rw.spans) != 1 || rw.spans[0].kind != kSecret || string(rw.src[rw.spans[0].start:rw.spans[0].end]) != value {
				t.Errorf("%q: %+v", line, rw.spans)
			}
		}
		if vendorKey([]byte(v.p+string(rest[:max(0, v.rest-5)]))) && len(v.p)+v.rest-5 >= 12 {
			t.Errorf("%q with a short rest is a vendor key", v.p)
		}
	}
}

// A public name stays; a name is a host's when it names an internal zone,
// by each zone entry, or a machine.
func TestHostNamesEntryByEntry(t *testing.T) {
	for _, z := range slices.Sorted(maps.Keys(internalZones)) {
		for _, name := range []string{"orders." + z, "pg-5." + z + ".fjordbank.net"} {
			if got := String("connect " + name + " ok"); got != "connect <HOST> ok" {
				t.Errorf("zone %q: %q", z, got)
			}
		}
	}
	expectRedacted(t, map[string]string{
		"see https://docs.strapi.io/cms/configurations":             "see https://docs.strapi.io/cms/configurations",
		"Credential store for github.com":                           "Credential store for github.com",
		"View project at https://wandb.ai/nw-ml/churn":              "View project at https://wandb.ai/nw-ml/churn",
		"connect db01.acme.com:5432":                                "connect <HOST>:5432",
		"ECR login to 414341772824.dkr.ecr.eu-west-1.amazonaws.com": "ECR login to <ACCOUNT>.dkr.ecr.eu-west-1.amazonaws.com",
		"org.apache.hadoop.hdfs.server.DataNode started":            "org.apache.hadoop.hdfs.server.DataNode started",
		"settings.local.json loaded":                                "settings.local.json loaded",
	})
}

// The syntaxes a credential's value stands in, and what is no value there.
func TestAssignments(t *testing.T) {
	expectRedacted(t, map[string]string{
		// Keys in any language and naming style; nouns after their qualifier.
		"kennwort_nas: ciruela21":                                  "kennwort_nas: <SECRET>",
		"contraseña_router: July1973":                              "contraseña_router: <SECRET>",
		"'mot_de_passe' => 'libellule.17?',":                       "'mot_de_passe' => '<SECRET>',",
		`{"securityAnswer":"Kraków"}`:                              `{"securityAnswer":"<SECRET>"}`,
		`{"seed_words":"tunnel obey volcano"}`:                     `{"seed_words":"<SECRET>"}`,
		"Steam Guard code:CVC7L":                                   "Steam Guard code:<SECRET>",
		"Public key: +bSlf6HDjKP2HDWpncWCFEQjE4f0oSvtK578UmgRRBE=": "Public key: +bSlf6HDjKP2HDWpncWCFEQjE4f0oSvtK578UmgRRBE=",
		"alarm_code: \"522724\"":                                   "alarm_code: \"<SECRET>\"",
		"POST /verify/check code=8268":                             "POST /verify/check code=<SECRET>",
		`{"code":200,"status":"OK"}`:                               `{"code":200,"status":"OK"}`,
		"PDOException(code: 1045)":                                 "PDOException(code: 1045)",
		// Separators: aligned columns, subscripts, operators, escaped breaks.
		" password       : teloiv7":                            " password       : <SECRET>",
		`os.environ["MLFLOW_TRACKING_PASSWORD"] = "hunter2 x"`: `os.environ["MLFLOW_TRACKING_PASSWORD"] = "<SECRET>"`,
		"$config['smtp.settings']['smtp_password'] = 'pw1?';":  "$config['smtp.settings']['smtp_password'] = '<SECRET>';",
		`asana_TOKEN :::= "3416850434123131"`:                  `asana_TOKEN :::= "<SECRET>"`,
		`$discordToken .= "414148813964170807"`:                `$discordToken .= "<SECRET>"`,
		`Username: crm\r\nSecret: eclipse fiber mosquito\r\n`:  `Username: <USER>\r\nSecret: <SECRET>\r\n`,
		"--admin-password=Amber&Beacon58 --admin-email=x":      "--admin-password=<SECRET> --admin-email=x",
		"?user=tb&password=heron wombat flame\" Origin":        "?user=<USER>&password=<SECRET>\" Origin",
		"password=hunter for user alice":                       "password=<SECRET> for user <USER>",
		// References, notes, types and placeholders are no values.
		"APP_SECRET: '%env(APP_SECRET)%'":                                  "APP_SECRET: '%env(APP_SECRET)%'",
		`<add key="ClearTextPassword" value="%TestPassword%" />`:           `<add key="ClearTextPassword" value="%TestPassword%" />`,
		"SUMO_ACCESS_KEY={SumoAccessKey}":                                  "SUMO_ACCESS_KEY={SumoAccessKey}",
		"-e SUMO_ACCESS_KEY=`etcdctl get /sumologic_secret`":               "-e SUMO_ACCESS_KEY=`etcdctl get /sumologic_secret`",
		"mot_de_passe: <masqué>":                                           "mot_de_passe: <masqué>",
		"pw: (not set)":                                                    "pw: (not set)",
		"PASSWORD=(lMdG]WB5}393g) rejected":                                "PASSWORD=<SECRET>) rejected",
		"def rotate(secret_id: str) -> None:":                              "def rotate(secret_id: str) -> None:",
		`const token = req.headers.authorization?.split(" ")[1];`:          `const token = req.headers.authorization?.split(" ")[1];`,
		"administrator_login_password = var.db_password":                   "administrator_login_password = var.db_password",
		`password = os.environ["DB_PASSWORD"]`:                             `password = os.environ["DB_PASSWORD"]`,
		"password: {env: DAGSTER_PG_PASSWORD}":                             "password: {env: DAGSTER_PG_PASSWORD}",
		"PERPLEXITY_API_KEY=pplx-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx": "PERPLEXITY_API_KEY=pplx-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
		"ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx":                         "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
		"curl --user '$USERNAME:$PASSWORD' $URL":                           "curl --user '$USERNAME:$PASSWORD' $URL",
		"curl -u username:password https://h":                              "curl -u username:password https://h",
		`curl -u ":d2LkV78zLx!t" https://h`:                                `curl -u "<SECRET>" https://h`,
	})
}

// The filters proven reads before a proof's shape and words only rule out
// what cannot match: a proof whose bit proofsMay clears does not fit the
// value, and the last word of every phrase of a proof is in its ends.
func TestProofFiltersRuleOutOnlyMisfits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabets := []string{"0123456789abcdef", "0123456789ABCDEF", "0123456789abcdefABCDEF",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", "abcdefghijklmnopqrstuvwxyz0123456789-_=.", "0123456789."}
	checked := 0
	for n := 1; n <= 300; n++ {
		for _, a := range alphabets {
			for range 4 {
				v := make([]byte, n)
				for k := range v {
					v[k] = a[r.IntN(len(a))]
				}
				vc := classOf(v)
				may := proofsMay(n, vc)
				for i := range proofsTable[:min(64, len(proofsTable))] {
					if may&(1<<i) == 0 && proofsTable[i].shape.fitsClassButExpr(v, 0, vc) {
						t.Fatalf("%s: proofsMay rules out %q, which fits", proofsTable[i].name, v)
					}
					checked++
				}
			}
		}
	}
	for _, p := range proofsTable {
		for _, w := range p.words {
			last := w[strings.LastIndexByte(w, ' ')+1:]
			if w != strings.ToLower(w) || !p.ends.has(len(last), last[0]) {
				t.Errorf("%s: the phrase %q is not in lower case or its last word is not in the proof's ends", p.name, w)
			}
		}
	}
	t.Logf("%d values and proofs checked", checked)
}

// digitCount, eight bytes at a time, and indexFold, which searches with
// IndexByte, agree with their definitions on random text of every byte.
func TestDigitCountAndIndexFoldByDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const alphabet = "0123456789:/@aAbBmMxX .-\x00\x7f\x80\xb0\xb9\xba\xff"
	lits := []string{"machine ", "m", "ma", "default login ", "x:", ":/", "0", "\x80b"}
	for range 20000 {
		s := make([]byte, r.IntN(40))
		for k := range s {
			if r.IntN(4) == 0 {
				s[k] = byte(r.IntN(256))
			} else {
				s[k] = alphabet[r.IntN(len(alphabet))]
			}
		}
		want := 0
		for _, c := range s {
			if c >= '0' && c <= '9' {
				want++
			}
		}
		if got := digitCount(s); got != want {
			t.Fatalf("digitCount(%q) = %d, want %d", s, got, want)
		}
		for _, lit := range lits {
			want := -1
			for i := 0; i+len(lit) <= len(s); i++ {
				if hasPrefixFold(s[i:], lit) {
					want = i
					break
				}
			}
			if got := indexFold(s, lit); got != want {
				t.Fatalf("indexFold(%q, %q) = %d, want %d", s, lit, got, want)
			}
		}
	}
}

// judge returns at once on a value without letters and with fewer than
// three '/', which it would otherwise judge whole: generated never reads
// such a value as generated, so judge names no range in it and proves
// nothing public, whatever the words before it.
func TestJudgeKeepsValuesWithoutLetters(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const alphabet = "0123456789012345678901234567890123456789.-_+=%~/"
	for range 20000 {
		v := make([]byte, minShort+r.IntN(48))
		slashes := 0
		for k := range v {
			c := alphabet[r.IntN(len(alphabet))]
			if c == '/' {
				if slashes++; slashes > 2 {
					c = '7'
				}
			}
			v[k] = c
		}
		if generated(v) {
			t.Fatalf("generated(%q): a value without letters read as generated", v)
		}
		for _, before := range []string{"x ", "session ", "commit ", "sha256 ", "trace id "} {
			src := []byte(before + string(v) + " y")
			rw := &rewriter{src: src, keys: &keyCache{}}
			judge(rw, len(before), len(before)+len(v))
			if len(rw.spans) > 0 || len(rw.public) > 0 {
				t.Fatalf("judge(%q): masks %v, proves %v", src, rw.spans, rw.public)
			}
		}
	}
}

// Each filter that a pass asks before a set lets every word of the set
// through, and the filter of announcedWords rules out most words of prose.
func TestWordFiltersHoldTheirSets(t *testing.T) {
	for name, c := range map[string]struct {
		f    *wordFilter
		keys []string
	}{
		"loginVerbs": {loginFilter, slices.Collect(maps.Keys(loginVerbs))}, "accountWords": {accountFilter, slices.Collect(maps.Keys(accountWords))},
		"announcedWords": {announcedFilter, slices.Collect(maps.Keys(announcedWords))}, "settingWords": {settingFilter, slices.Collect(maps.Keys(settingWords))},
		"connectors":     {connectorFilter, slices.Collect(maps.Keys(connectors))},
		"qualifiedNouns": {qualifiedFilter, slices.Collect(maps.Keys(qualifiedNouns))}, "englishWords": {englishFilter, slices.Collect(maps.Keys(englishWords))},
		"credentialWords": {credentialFilter, slices.Collect(maps.Keys(credentialWords))}, "internalZones": {zoneFilter, slices.Collect(maps.Keys(internalZones))},
		"hostTLDs": {tldFilter, slices.Collect(maps.Keys(hostTLDs))},
	} {
		for _, w := range c.keys {
			if !c.f.may([]byte(w)) {
				t.Errorf("%s: the filter rules out %q", name, w)
			}
		}
	}
	passed := 0
	for _, w := range strings.Fields("failed for user from retried twice payment timeout after order connection refused retries cache miss session shard") {
		if announcedFilter.may([]byte(w)) {
			passed++
		}
	}
	if passed > 4 {
		t.Errorf("the filter of announcedWords lets %d of 15 words of prose through", passed)
	}
}
