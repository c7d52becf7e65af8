package redact

import "testing"

// In a credential's position a value is masked whatever its shape; what is
// provably no value (a reference, a call, a setting of the credential)
// stays.
func TestCredentialPositionsWinOverShape(t *testing.T) {
	for in, want := range map[string]string{
		// A key names what its last words name.
		"brokerClientTlsKeyStorePassword=pony.cabin.2010": "brokerClientTlsKeyStorePassword=<SECRET>",
		`enable_password = "Stern714_";`:                  `enable_password = "<SECRET>";`,
		`{"password":"a1","password2":"Marble*Berg76"}`:   `{"password":"<SECRET>","password2":"<SECRET>"}`,
		"keyStorePath=/etc/broker/keystore.jks":           "keyStorePath=/etc/broker/keystore.jks",
		"mysql_auth_server_impl=static":                   "mysql_auth_server_impl=static",
		"max_tokens=4096 min_password=12":                 "max_tokens=4096 min_password=12",
		// A flag named for a credential is read by its name, in any shape.
		`Connect-VBRServer -Password "Olive.Sapphire36"`: `Connect-VBRServer -Password "<SECRET>"`,
		"hivemq-cli pub -pw daisy79 -t fleet":            "hivemq-cli pub -pw <SECRET> -t fleet",
		"mkdir -pv /srv/data":                            "mkdir -pv /srv/data",
		// A call yields the value; it holds none.
		"$settings['hash_salt'] = file_get_contents('/var/www/private/salt.txt');": "$settings['hash_salt'] = file_get_contents('/var/www/private/salt.txt');",
	} {
		if got := String(in); got != want {
			t.Errorf("%q:\n got  %q\n want %q", in, got, want)
		}
	}
}
