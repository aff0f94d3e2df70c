// Package redact is llmbench's one secret policy. A Policy is built once from the target
// (its URL, API key and extra headers) and hides, in any text a run writes or prints:
//
//   - the API key;
//   - every extra header value, and each of its token parts ("Bearer SECRET123" hides
//     "SECRET123" alone too; a Basic credential also hides its decoded user and password);
//   - the URL's user info (user name and password) and every query value.
//
// Parts shorter than MinSecret bytes and authentication scheme words (Bearer, Basic, …) are
// not hidden on their own: replacing them everywhere would garble text without protecting
// anything. Hidden text becomes Marker. Besides the target's own secrets, every URL found in a
// text loses its user info and query values, and command lines lose the values of --header
// and of flags whose name says key, token, secret, password or auth.
//
// The client's error messages and response ids, the run facts and command line in
// summary.json, the HTML report, the /metrics scraper and the terminal all go through it. It
// does no I/O.
package redact

import (
	"encoding/base64"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Marker replaces every hidden value.
const Marker = "<redacted>"

// MinSecret is the shortest part of a header value or URL hidden on its own.
const MinSecret = 4

// Target is what a policy is built from.
type Target struct {
	URL     string
	APIKey  string
	Headers map[string]string
	// MoreURLs are further endpoints of the same run (the arms of an A/B run), treated as URL.
	MoreURLs []string
}

// Policy hides one target's secrets. The zero value and nil hide only what the static rules
// find (URL user info and query values, secret flags of a command line).
type Policy struct {
	secrets []string // longest first
	r       *strings.Replacer
}

// schemeWords are authentication scheme names: part of a header value, not secret.
var schemeWords = map[string]bool{"bearer": true, "basic": true, "digest": true, "token": true, "negotiate": true, "apikey": true, "api-key": true}

// New builds the policy of t.
func New(t Target) *Policy {
	seen := map[string]bool{}
	var list []string
	add := func(s string) {
		if len(s) < MinSecret || seen[s] {
			return
		}
		seen[s] = true
		list = append(list, s)
		for _, v := range []string{url.QueryEscape(s), url.PathEscape(s)} {
			if v != s && !seen[v] {
				seen[v] = true
				list = append(list, v)
			}
		}
	}
	add(t.APIKey)
	for _, v := range t.Headers {
		addValue(v, add)
	}
	for _, raw := range append([]string{t.URL}, t.MoreURLs...) {
		if u, err := url.Parse(raw); err == nil {
			if u.User != nil {
				add(u.User.Username())
				if p, ok := u.User.Password(); ok {
					add(p)
				}
			}
			for _, part := range strings.Split(u.RawQuery, "&") {
				_, v, _ := strings.Cut(part, "=")
				add(v)
				if uv, err := url.QueryUnescape(v); err == nil {
					add(uv)
				}
			}
		} else if i := strings.Index(raw, "@"); i >= 0 {
			// Unparsable: hide what looks like user info.
			ui := raw[:i]
			if j := strings.Index(ui, "://"); j >= 0 {
				ui = ui[j+3:]
			}
			add(ui)
			for _, p := range strings.Split(ui, ":") {
				add(p)
			}
		}
	}
	slices.SortStableFunc(list, func(a, b string) int { return len(b) - len(a) })
	p := &Policy{secrets: list}
	if len(list) > 0 {
		pairs := make([]string, 0, 2*len(list))
		for _, s := range list {
			pairs = append(pairs, s, Marker)
		}
		p.r = strings.NewReplacer(pairs...)
	}
	return p
}

// addValue adds a header value and its token parts.
func addValue(v string, add func(string)) {
	v = strings.TrimSpace(v)
	add(v)
	parts := strings.FieldsFunc(v, func(r rune) bool {
		return r == ' ' || r == '\t' || r == ',' || r == ';' || r == '=' || r == '"'
	})
	for i, p := range parts {
		if schemeWords[strings.ToLower(p)] {
			if strings.EqualFold(p, "basic") && i+1 < len(parts) {
				if dec, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(parts[i+1], "=")); err == nil {
					cred := string(dec)
					add(cred)
					u, pw, _ := strings.Cut(cred, ":")
					add(u)
					add(pw)
				}
			}
			continue
		}
		add(p)
	}
}

// Len is the number of strings the policy hides (escaped spellings included).
func (p *Policy) Len() int {
	if p == nil {
		return 0
	}
	return len(p.secrets)
}

// String hides the target's secrets in s and the user info and query values of every URL in
// it.
func (p *Policy) String(s string) string {
	if p != nil && p.r != nil {
		s = p.r.Replace(s)
	}
	return URLsIn(s)
}

// URL returns raw with the policy applied and its user info and query values hidden.
func (p *Policy) URL(raw string) string { return p.String(URL(raw)) }

// Command returns the command line args (without the program name) as one string, with
// secret flag values, URL secrets and the target's secrets hidden.
func (p *Policy) Command(program string, args []string) string {
	out := make([]string, 0, len(args)+1)
	out = append(out, program)
	hide := ""
	for _, a := range args {
		switch {
		case hide != "":
			out = append(out, flagValue(hide, a))
			hide = ""
		case strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && secretFlag(a):
			out = append(out, a)
			hide = a
		case strings.HasPrefix(a, "-") && strings.Contains(a, "="):
			k, v, _ := strings.Cut(a, "=")
			if secretFlag(k) {
				out = append(out, k+"="+flagValue(k, v))
			} else {
				out = append(out, k+"="+URL(v))
			}
		default:
			out = append(out, URL(a))
		}
	}
	return p.String(strings.Join(out, " "))
}

// secretFlag reports whether a flag's value is secret: --header, and any flag whose name
// mentions a key, token, secret, password or auth (--api-key, --auth-token …; not
// --api-key-env, which names a variable).
func secretFlag(flag string) bool {
	name := strings.ToLower(strings.TrimLeft(flag, "-"))
	if name == "header" {
		return true
	}
	segs := strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' })
	if len(segs) == 0 || segs[len(segs)-1] == "env" || segs[0] == "timeout" {
		return false // --api-key-env names a variable; --timeout-first-token is a duration
	}
	for _, s := range segs {
		switch s {
		case "key", "apikey", "token", "secret", "password", "passwd", "auth", "authorization", "credential", "credentials":
			return true
		}
	}
	return false
}

// flagValue hides a secret flag's value (a --header's name too: it may be a bare secret).
func flagValue(string, string) string { return Marker }

// URL hides raw's user info and query values: http://u:p@h/v1?k=v becomes
// http://<redacted>@h/v1?k=<redacted>. Text that is not a URL comes back unchanged, except
// that anything before an '@' following "://" is hidden.
func URL(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return roughURL(raw, i)
	}
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
	if u.User != nil {
		b.WriteString(Marker)
		b.WriteByte('@')
	}
	b.WriteString(u.Host)
	b.WriteString(u.EscapedPath())
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteByte('?')
		b.WriteString(hideQuery(u.RawQuery))
	}
	return b.String()
}

func hideQuery(q string) string {
	parts := strings.Split(q, "&")
	for j, part := range parts {
		if k, v, ok := strings.Cut(part, "="); ok && v != "" {
			parts[j] = k + "=" + Marker
		}
	}
	return strings.Join(parts, "&")
}

// roughURL hides user info and query values of text that looks like a URL but does not parse.
func roughURL(raw string, i int) string {
	rest := raw[i+3:]
	end := strings.IndexAny(rest, "/?#")
	host := rest
	if end >= 0 {
		host = rest[:end]
	}
	if at := strings.LastIndex(host, "@"); at >= 0 {
		rest = Marker + rest[at:]
	}
	if q := strings.Index(rest, "?"); q >= 0 {
		query := rest[q+1:]
		if h := strings.Index(query, "#"); h >= 0 {
			query = query[:h]
		}
		rest = rest[:q+1] + hideQuery(query)
	}
	return raw[:i+3] + rest
}

var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>` + "`" + `]+`)

// URLsIn hides the user info and query values of every URL in s.
func URLsIn(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlInText.ReplaceAllStringFunc(s, func(m string) string {
		trail := ""
		for len(m) > 0 && strings.ContainsRune(").,;:", rune(m[len(m)-1])) {
			trail = m[len(m)-1:] + trail
			m = m[:len(m)-1]
		}
		return URL(m) + trail
	})
}

var secretInCommand = regexp.MustCompile(`(?i)(--?[a-z0-9_-]+)(=|\s+)("[^"]*"|'[^']*'|\S+)`)

// CommandString hides secret flag values and URL secrets in a command line already joined
// into one string (a summary.json written by an older version, re-rendered by a report).
func CommandString(cmd string) string {
	cmd = secretInCommand.ReplaceAllStringFunc(cmd, func(m string) string {
		sub := secretInCommand.FindStringSubmatch(m)
		if !secretFlag(sub[1]) || strings.HasPrefix(sub[3], "-") {
			return m
		}
		v := strings.Trim(sub[3], `"'`)
		return sub[1] + sub[2] + flagValue(sub[1], v)
	})
	return URLsIn(cmd)
}
