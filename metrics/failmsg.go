package metrics

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// MessageCount is one server or client message of failed requests and how many had it.
type MessageCount struct {
	// Message is the first message seen of its shape, cut to FailMessageLen runes. Messages
	// reach Records already scrubbed of the run's secrets (loadgen removes the API key, header
	// values and URL credentials before a message is recorded).
	Message string `json:"message"`
	Count   int    `json:"count"`
}

const (
	// FailMessageLen bounds a summarized failure message, in runes.
	FailMessageLen = 160
	// FailMessagesShown is how many messages per failure kind the summary keeps.
	FailMessagesShown = 3
	// failShapesPerKind bounds the distinct message shapes tallied per kind; later new shapes
	// are counted under the kind but not listed.
	failShapesPerKind = 256
)

// failTally counts the messages of failed requests per kind. Messages that differ only in
// their numbers (token counts, request ids, ports) are one shape, so "prompt has 5012 tokens"
// and "prompt has 4200 tokens" add up; the first one seen stands for the shape.
type failTally map[string]map[string]*MessageCount

func (t failTally) add(kind FailureKind, msg string) {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return
	}
	byShape := t[string(kind)]
	if byShape == nil {
		byShape = map[string]*MessageCount{}
		t[string(kind)] = byShape
	}
	shape := messageShape(msg)
	if m := byShape[shape]; m != nil {
		m.Count++
		return
	}
	if len(byShape) < failShapesPerKind {
		byShape[shape] = &MessageCount{Message: cutRunes(msg, FailMessageLen), Count: 1}
	}
}

// top returns the most common messages of each kind, most common first (ties by text).
func (t failTally) top() map[string][]MessageCount {
	if len(t) == 0 {
		return nil
	}
	out := make(map[string][]MessageCount, len(t))
	for kind, byShape := range t {
		list := make([]MessageCount, 0, len(byShape))
		for _, m := range byShape {
			list = append(list, *m)
		}
		sort.Slice(list, func(i, j int) bool {
			if list[i].Count != list[j].Count {
				return list[i].Count > list[j].Count
			}
			return list[i].Message < list[j].Message
		})
		if len(list) > FailMessagesShown {
			list = list[:FailMessagesShown]
		}
		out[kind] = list
	}
	return out
}

// messageShape replaces every run of digits with '#' and collapses white space.
func messageShape(s string) string {
	var b strings.Builder
	digits, space := false, false
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			if !digits {
				b.WriteByte('#')
			}
			digits, space = true, false
			continue
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if !space {
				b.WriteByte(' ')
			}
			digits, space = false, true
			continue
		}
		digits, space = false, false
		b.WriteRune(r)
	}
	return b.String()
}

func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
