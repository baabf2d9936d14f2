package stdiorelay

import (
	"sync"
)

// maxQueued bounds the bytes waiting on one stream for a client that
// reads slowly; beyond it the stream's messages other than responses are
// dropped (a response is always kept: there is one per request).
const maxQueued = 32 << 20

// item is a message on its way to a client: a response to call (its
// last message) when call is set; fail says the process ended before it
// answered (data is then the relay's error response).
type item struct {
	data []byte
	call *call
	fail error
}

// stream is where the messages for one HTTP response wait for the
// handler that writes them: the SSE stream of a POST, or a session's
// standalone GET stream. The upstream's reader pushes, without waiting;
// the handler takes.
type stream struct {
	mu     sync.Mutex
	items  []item
	queued int
	gone   bool // the handler has returned: nothing more is taken
	wake   chan struct{}
	// dropped counts messages dropped for a slow client.
	dropped int
}

func newStream() *stream { return &stream{wake: make(chan struct{}, 1)} }

// push queues a message, and reports false when the stream's handler is
// gone (the message is not queued: send it elsewhere).
func (st *stream) push(it item) bool {
	st.mu.Lock()
	if st.gone {
		st.mu.Unlock()
		return false
	}
	if it.call == nil && st.queued+len(it.data) > maxQueued {
		st.dropped++
		st.mu.Unlock()
		return true
	}
	st.items = append(st.items, it)
	st.queued += len(it.data)
	st.mu.Unlock()
	select {
	case st.wake <- struct{}{}:
	default:
	}
	return true
}

// take returns what is queued, swapping buf in as the new queue.
func (st *stream) take(buf []item) []item {
	st.mu.Lock()
	items := st.items
	st.items = buf[:0]
	st.queued = 0
	st.mu.Unlock()
	return items
}

// close marks the handler gone and returns what was still queued.
func (st *stream) close() []item {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.gone = true
	items := st.items
	st.items = nil
	return items
}
