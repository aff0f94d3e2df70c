package usecase

import (
	"fmt"
	"io"
)

// fdPerStream is how many file descriptors one HTTP/1.1 stream in flight holds: its socket,
// and the server's end too when the embedded engine runs in this process.
func fdPerStream(embedded bool) int {
	if embedded {
		return 2
	}
	return 1
}

// fdReserve is what the process keeps open besides streams (results files, listeners,
// standard streams, the runtime's own).
const fdReserve = 64

// warnFDHeadroom prints a warning when the planned concurrency (closed-loop or the open-loop
// cap; 0: not known in advance) needs more file descriptors than the soft limit allows
// (limit 0: unknown). HTTP/2 multiplexes streams, so it never warns then. The requests that
// find no descriptor fail as client_fd_limit and make the run client-limited.
func warnFDHeadroom(w io.Writer, planned int, embedded, http2 bool, limit uint64) {
	if planned <= 0 || limit == 0 || http2 {
		return
	}
	need := uint64(planned*fdPerStream(embedded) + fdReserve)
	if need <= limit {
		return
	}
	where := ""
	if embedded {
		where = " (two per stream: the embedded engine runs in this process)"
	}
	fmt.Fprintf(w, "warning: %d concurrent streams need about %d file descriptors%s, but the limit is %d: the requests past it fail as client_fd_limit and the run is client-limited; raise the hard limit (ulimit -Hn), or use --http2\n",
		planned, need, where, limit)
}
