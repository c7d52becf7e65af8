package gateway

import (
	"errors"
	"path/filepath"
	"strconv"

	"github.com/toolcanon/toolcanon/canonical/redisstore/redisconn"
)

// redis reads the configuration's "redis" object: a redisconn.Spec, its
// members named as redisconn.Fields names them, its files relative to the
// configuration's directory. It reads no file and connects to nothing.
func (c *cfgParser) redis(n *jnode, ptr string) (*redisconn.Spec, error) {
	fields := redisconn.Fields()
	names := make([]string, 0, len(fields))
	for _, f := range fields {
		names = append(names, f.Name)
	}
	if err := c.obj(n, ptr, names...); err != nil {
		return nil, err
	}
	const fix = `name the server with "url": "rediss://user@host:port", and its password with "password_file" or "password_env"`
	var s redisconn.Spec
	for i, k := range n.keys {
		v, p := n.vals[i], ptr+"/"+escapePointer(k)
		var want jkind
		for _, f := range fields {
			if f.Name == k {
				want = map[redisconn.Kind]jkind{redisconn.KindBool: jBool, redisconn.KindInt: jNumber}[f.Kind]
				if want == 0 {
					want = jString
				}
			}
		}
		if v.kind != want {
			return nil, c.fail(v, p, fix, "expected %s, found %s", want, v.kind)
		}
		if err := s.Set(k, v.str); err != nil {
			return nil, c.fail(v, p, "", "%s", specMessage(err))
		}
	}
	if n.member("url") == nil {
		return nil, c.fail(n, ptr, fix, `missing member "url"`)
	}
	if err := s.Validate(); err != nil {
		var e *redisconn.Error
		if errors.As(err, &e) && e.Field != "" && n.member(e.Field) != nil {
			return nil, c.fail(n.member(e.Field), ptr+"/"+e.Field, "", "%s", specMessage(err))
		}
		return nil, c.fail(n, ptr, "", "%s", err.Error())
	}
	dir, err := filepath.Abs(filepath.Dir(c.file))
	if err != nil {
		return nil, c.fail(n, ptr, fix, "cannot find the configuration's directory: %v", err)
	}
	s = s.Resolve(dir)
	return &s, nil
}

// specMessage is a redisconn error without the field's name, which the
// pointer already gives.
func specMessage(err error) string {
	var e *redisconn.Error
	if errors.As(err, &e) {
		return (&redisconn.Error{Msg: e.Msg}).Error()
	}
	return err.Error()
}

// redisSecretStays refuses an upstream that would be handed the Redis
// password: an inherit_env (the command's environment) or bearer_token_env
// (sent to the upstream's URL) that names the variable it is read from.
func (c *cfgParser) redisSecretStays(root *jnode, cfg *Config) error {
	secret := map[string]bool{redisconn.EnvPassword: true}
	if cfg.Redis != nil && cfg.Redis.PasswordEnv != "" {
		secret[cfg.Redis.PasswordEnv] = true
	}
	ups := root.member("upstreams")
	for i, name := range ups.keys {
		u := ups.vals[i]
		p := "/upstreams/" + escapePointer(name)
		if ie := u.member("inherit_env"); ie != nil {
			for j, e := range ie.elems {
				if secret[e.str] {
					return c.fail(e, p+"/inherit_env/"+strconv.Itoa(j), "remove it: the upstream needs no access to the store",
						"$%s holds the Redis password: the upstream's process would get it", e.str)
				}
			}
		}
		if b := u.member("bearer_token_env"); b != nil && secret[b.str] {
			return c.fail(b, p+"/bearer_token_env", "name the variable that holds the upstream's own token",
				"$%s holds the Redis password: it would be sent to the upstream as a bearer token", b.str)
		}
	}
	return nil
}
