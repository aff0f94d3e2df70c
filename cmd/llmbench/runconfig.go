package main

import (
	"github.com/spf13/pflag"
)

// secretFlags may carry a secret or a URL with credentials: they are never recorded as
// configuration (the endpoint is recorded redacted in run.endpoint).
var secretFlags = map[string]bool{
	"api-key": true, "api-key-env": true, "header": true, "endpoint": true, "a-endpoint": true, "b-endpoint": true,
	"judge-endpoint": true, "judge-api-key-env": true, // quality (issue 17)
	"scrape-workers": true, // prefix cache per worker (flags_prefix.go)
}

// flagConfig is every flag of the command with its value (defaults included), less
// secretFlags and the ones that only say where output goes: summary.json's run.config.
func flagConfig(fs *pflag.FlagSet) map[string]string {
	if fs == nil {
		return nil
	}
	out := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		if secretFlags[f.Name] || f.Name == "help" {
			return
		}
		out[f.Name] = f.Value.String()
	})
	return out
}
