package runner

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The grid of server configurations of `sweep --serve-cmd` (issue 39 item 3,
// docs/capacity.md): `--grid KEY=V1,V2` axes whose every combination is one server command,
// the template's `{KEY}` placeholders filled in and `{port}` set to a free loopback port.

// GridAxis is one --grid axis: a key and its values, in the order given.
type GridAxis struct {
	Key    string
	Values []string
}

// gridKey is what a --grid key may be: it names a placeholder and a directory part.
var gridKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// placeholder is a {name} in a server command template; other braces (a JSON argument) are
// left as they are.
var placeholder = regexp.MustCompile(`\{([A-Za-z][A-Za-z0-9_-]*)\}`)

// ParseGrid parses --grid values ("KEY=V1,V2,…", repeatable): each key once, a letter then
// letters, digits, '-' or '_', not "port"; each value non-empty, without spaces, braces,
// quotes or path separators (it goes into a command line and a directory name), and no value
// twice.
func ParseGrid(specs []string) ([]GridAxis, error) {
	var out []GridAxis
	seen := map[string]bool{}
	for _, s := range specs {
		key, vals, ok := strings.Cut(s, "=")
		key = strings.TrimSpace(key)
		if !ok || !gridKey.MatchString(key) {
			return nil, fmt.Errorf("--grid %q: want KEY=V1,V2,… with KEY a letter then letters, digits, - or _", s)
		}
		if key == "port" {
			return nil, fmt.Errorf("--grid %q: {port} is set by llmbench (a free loopback port per server); choose another key", s)
		}
		if seen[key] {
			return nil, fmt.Errorf("--grid %q: key %s given twice; list all its values in one --grid", s, key)
		}
		seen[key] = true
		ax := GridAxis{Key: key}
		dup := map[string]bool{}
		for _, v := range strings.Split(vals, ",") {
			v = strings.TrimSpace(v)
			if v == "" || strings.ContainsAny(v, " \t\n{}'\"\\/`$;&|<>") {
				return nil, fmt.Errorf("--grid %q: value %q: want non-empty values without spaces, quotes, braces, slashes or shell characters", s, v)
			}
			if dup[v] {
				return nil, fmt.Errorf("--grid %q: value %q given twice", s, v)
			}
			dup[v] = true
			ax.Values = append(ax.Values, v)
		}
		out = append(out, ax)
	}
	return out, nil
}

// CheckServeTemplate checks a --serve-cmd template against the grid before anything starts:
// it must use {port}, every grid key as {KEY}, and no placeholder the grid does not define.
// gpus, when not a number, must be one grid key as {KEY} (--gpus-per-server).
func CheckServeTemplate(tmpl string, grid []GridAxis, gpus string) error {
	if strings.TrimSpace(tmpl) == "" {
		return fmt.Errorf("--serve-cmd is empty: give the server's command line, with {port} where its port goes")
	}
	used := map[string]bool{}
	for _, m := range placeholder.FindAllStringSubmatch(tmpl, -1) {
		used[m[1]] = true
	}
	if !used["port"] {
		return fmt.Errorf("--serve-cmd %q has no {port}: llmbench picks a free loopback port for each server and must tell it (e.g. --port {port})", tmpl)
	}
	keys := map[string]bool{"port": true}
	for _, ax := range grid {
		keys[ax.Key] = true
		if !used[ax.Key] {
			return fmt.Errorf("--grid %s: the --serve-cmd template does not use {%s}, so every value would start the same server; add {%s} to the template or drop the axis", ax.Key, ax.Key, ax.Key)
		}
	}
	var unknown []string
	for k := range used {
		if !keys[k] {
			unknown = append(unknown, "{"+k+"}")
		}
	}
	sort.Strings(unknown)
	if len(unknown) > 0 {
		return fmt.Errorf("--serve-cmd uses %s, which no --grid defines (placeholders are {port} and the --grid keys)", strings.Join(unknown, ", "))
	}
	if _, err := gpusFor(gpus, nil, grid); err != nil {
		return err
	}
	return nil
}

// gpusFor is the GPUs a configuration's server uses from --gpus-per-server: a number, or
// {KEY} for a grid key whose values are numbers. With values nil it only checks the spec.
func gpusFor(spec string, values map[string]string, grid []GridAxis) (float64, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return 1, nil
	}
	if v, err := strconv.ParseFloat(spec, 64); err == nil {
		if !(v > 0) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("--gpus-per-server %s: want a number > 0 or {KEY} of a --grid key", spec)
		}
		return v, nil
	}
	m := placeholder.FindStringSubmatch(spec)
	if m == nil || m[0] != spec {
		return 0, fmt.Errorf("--gpus-per-server %q: want a number > 0 or {KEY} of a --grid key", spec)
	}
	for _, ax := range grid {
		if ax.Key != m[1] {
			continue
		}
		for _, v := range ax.Values {
			if f, err := strconv.ParseFloat(v, 64); err != nil || !(f > 0) || math.IsInf(f, 0) {
				return 0, fmt.Errorf("--gpus-per-server %s: --grid %s value %q is not a number > 0", spec, ax.Key, v)
			}
		}
		if values == nil {
			return 1, nil
		}
		return strconv.ParseFloat(values[ax.Key], 64)
	}
	return 0, fmt.Errorf("--gpus-per-server %s: no --grid key %s", spec, m[1])
}

// ServerConfig is one combination of the grid's values.
type ServerConfig struct {
	// Name is "key=value" pairs joined by ", " in grid order; Slug the same as a directory
	// name ("key-value_key-value").
	Name, Slug string
	Values     map[string]string
}

// Configs is every combination of the grid's values, the first axis varying slowest. An empty
// grid is one configuration with no values.
func Configs(grid []GridAxis) []ServerConfig {
	out := []ServerConfig{{Values: map[string]string{}}}
	for _, ax := range grid {
		var next []ServerConfig
		for _, c := range out {
			for _, v := range ax.Values {
				vals := map[string]string{ax.Key: v}
				for k, x := range c.Values {
					vals[k] = x
				}
				next = append(next, ServerConfig{Values: vals})
			}
		}
		out = next
	}
	for i := range out {
		var names, slugs []string
		for _, ax := range grid {
			names = append(names, ax.Key+"="+out[i].Values[ax.Key])
			slugs = append(slugs, ax.Key+"-"+out[i].Values[ax.Key])
		}
		out[i].Name, out[i].Slug = strings.Join(names, ", "), strings.Join(slugs, "_")
		if out[i].Slug == "" {
			out[i].Name, out[i].Slug = "server", "server"
		}
	}
	return out
}

// expand fills the template's placeholders for one configuration and port.
func expand(tmpl string, c ServerConfig, port int) string {
	return placeholder.ReplaceAllStringFunc(tmpl, func(m string) string {
		k := m[1 : len(m)-1]
		if k == "port" {
			return strconv.Itoa(port)
		}
		return c.Values[k]
	})
}
