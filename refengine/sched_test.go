package refengine

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestPreemptionWhenKVOverfills(t *testing.T) {
	// 64 blocks of 16 tokens = 1024 tokens of KV for 16 requests that each grow to 300.
	reqs := make([]SimRequest, 16)
	for i := range reqs {
		reqs[i] = SimRequest{ID: fmt.Sprintf("p%d", i), PromptTokens: 100, MaxTokens: 200}
	}
	res, err := Simulate(reqs, Config{NumBlocks: 64})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.Preemptions == 0 {
		t.Fatalf("no preemptions: %+v", res.Stats)
	}
	if res.Stats.MaxBlocksUsed > 64 {
		t.Fatalf("used %d blocks of 64", res.Stats.MaxBlocksUsed)
	}
	pre := 0
	for i, tl := range res.Timelines {
		pre += tl.Preemptions
		if !tl.Done || tl.OutputTokens != 200 {
			t.Fatalf("p%d: %+v", i, tl)
		}
	}
	if int64(pre) != res.Stats.Preemptions {
		t.Fatalf("timelines count %d preemptions, stats %d", pre, res.Stats.Preemptions)
	}
	// Recomputation costs extra prefill: computed tokens exceed prompt + output.
	if res.Stats.ComputedTokens <= int64(16*(100+200)) {
		t.Fatalf("computed %d tokens, want more than %d after recompute preemption", res.Stats.ComputedTokens, 16*300)
	}
	// The same trace with room for everything never preempts.
	res2, err := Simulate(reqs, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Stats.Preemptions != 0 {
		t.Fatalf("preemptions with a full-size cache: %d", res2.Stats.Preemptions)
	}
}

func TestPrefixCachingLowersTTFT(t *testing.T) {
	// 40 requests sharing a 4,096-token prefix (8 hash ids of 512 tokens), spaced so each
	// arrives after the previous finished its prefill.
	var reqs []SimRequest
	for i := 0; i < 40; i++ {
		reqs = append(reqs, SimRequest{ID: fmt.Sprintf("h%d", i), Arrival: time.Duration(i) * 500 * time.Millisecond,
			PromptTokens: 4096 + 64, HashIDs: []int64{1, 2, 3, 4, 5, 6, 7, 8}, MaxTokens: 8})
	}
	on, err := Simulate(reqs, Config{})
	if err != nil {
		t.Fatal(err)
	}
	off, err := Simulate(reqs, Config{DisablePrefixCaching: true})
	if err != nil {
		t.Fatal(err)
	}
	if on.Stats.PrefixHits != 39*4096 || on.Stats.PrefixQueries != 40*(4096+64) || off.Stats.PrefixQueries != 0 {
		t.Fatalf("prefix stats on %+v off %+v", on.Stats, off.Stats)
	}
	for i := 1; i < 40; i++ {
		a, b := on.Timelines[i], off.Timelines[i]
		if a.CachedTokens != 4096 || b.CachedTokens != 0 {
			t.Fatalf("h%d cached %d / %d", i, a.CachedTokens, b.CachedTokens)
		}
		if a.TTFT() >= b.TTFT()/2 {
			t.Fatalf("h%d: TTFT %v with caching, %v without: want well below half", i, a.TTFT(), b.TTFT())
		}
	}
	// Prompt text shares too: same prefix text hits, a different text does not.
	prefix := ""
	for i := 0; i < 300; i++ {
		prefix += " word"
	}
	text := []SimRequest{
		{ID: "a", Prompt: prefix + " alpha", MaxTokens: 4},
		{ID: "b", Arrival: time.Second, Prompt: prefix + " beta gamma", MaxTokens: 4},
		{ID: "c", Arrival: 2 * time.Second, Prompt: "other" + prefix, MaxTokens: 4},
	}
	res, err := Simulate(text, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := []int{res.Timelines[0].CachedTokens, res.Timelines[1].CachedTokens, res.Timelines[2].CachedTokens}; !slices.Equal(got, []int{0, 288, 0}) {
		t.Fatalf("cached tokens %v, want [0 288 0] (300 shared tokens = 18 full blocks)", got)
	}
}

func TestChunkedPrefillAndBudget(t *testing.T) {
	reqs := []SimRequest{
		{ID: "short", PromptTokens: 100, MaxTokens: 50},
		{ID: "long", Arrival: time.Millisecond, PromptTokens: 20000, MaxTokens: 4},
	}
	res, err := Simulate(reqs, Config{MaxNumBatchedTokens: 2048})
	if err != nil {
		t.Fatal(err)
	}
	short, long := res.Timelines[0], res.Timelines[1]
	// 20,000 prompt tokens in chunks of at most 2,047 (one token of each step's budget goes
	// to the decoding request) take 10 steps, and the decoding request emits a token in each
	// of them: chunked prefill does not stall running decodes.
	during := 0
	for _, em := range short.Emissions {
		if em.At > long.FirstScheduled && em.At <= long.Emissions[0].At {
			during++
		}
	}
	if during < 10 {
		t.Fatalf("short emitted %d tokens during long's prefill, want >= 10 (one per chunk)", during)
	}
	if res.Stats.ComputedTokens != 20000+100+4+50-2 {
		t.Fatalf("computed %d tokens", res.Stats.ComputedTokens)
	}
}

func TestMaxNumSeqsAndDeterminism(t *testing.T) {
	reqs := synthTrace(500, 200, 500, 200)
	cfg := Config{MaxNumSeqs: 32, SpecK: 3, SpecAlpha: 0.7}
	a, err := Simulate(reqs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.Stats.MaxRunning > 32 || a.Stats.MaxRunning < 32 {
		t.Fatalf("max running %d, want exactly the cap 32 under overload", a.Stats.MaxRunning)
	}
	b, err := Simulate(reqs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two simulations of the same trace differ")
	}
}

func TestSingleSequenceDecodeStep(t *testing.T) {
	// Llama 3.1 8B bf16 on one H100: a lone decode step lies between the bandwidth ceiling
	// (16 GB / 3.35 TB/s ≈ 4.8 ms) and 8 ms.
	res, err := Simulate([]SimRequest{{ID: "x", PromptTokens: 128, MaxTokens: 64}}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	em := res.Timelines[0].Emissions
	gap := em[10].At - em[9].At
	if gap < 4500*time.Microsecond || gap > 8*time.Millisecond {
		t.Fatalf("decode step %v, want 4.5–8 ms", gap)
	}
}

func TestSimulateRejectsBadRequests(t *testing.T) {
	for _, r := range []SimRequest{
		{ID: "empty", MaxTokens: 1},
		{ID: "nomax", PromptTokens: 5},
		{ID: "long", PromptTokens: 200000, MaxTokens: 1},
		{ID: "min", PromptTokens: 5, MaxTokens: 2, MinTokens: 3},
		{ID: "neg", PromptTokens: 5, MaxTokens: 2, Arrival: -1},
	} {
		if _, err := Simulate([]SimRequest{r}, Config{}); err == nil {
			t.Errorf("%s: no error", r.ID)
		}
	}
	if _, err := Simulate(nil, Config{TP: -1}); err == nil {
		t.Error("TP -1 accepted")
	}
}

func TestEarlyEOSFault(t *testing.T) {
	reqs := make([]SimRequest, 100)
	for i := range reqs {
		reqs[i] = SimRequest{ID: fmt.Sprintf("e%d", i), PromptTokens: 10, MaxTokens: 100, MinTokens: 20, IgnoreEOS: i%2 == 1}
	}
	f, err := ParseFaults("early-eos=1")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Simulate(reqs, Config{Faults: f})
	if err != nil {
		t.Fatal(err)
	}
	for i, tl := range res.Timelines {
		if i%2 == 1 && (tl.OutputTokens != 100 || tl.FinishReason != "length") {
			t.Fatalf("e%d ignores EOS but got %d tokens (%s)", i, tl.OutputTokens, tl.FinishReason)
		}
		if i%2 == 0 && (tl.OutputTokens < 20 || tl.OutputTokens >= 100 || tl.FinishReason != "stop") {
			t.Fatalf("e%d: %d tokens (%s), want an early stop at or after min_tokens 20", i, tl.OutputTokens, tl.FinishReason)
		}
	}
}

func TestDisaggregatedPoolsIsolateDecode(t *testing.T) {
	reqs := []SimRequest{{ID: "decoder", PromptTokens: 200, MaxTokens: 400}}
	for i := 0; i < 20; i++ {
		reqs = append(reqs, SimRequest{ID: fmt.Sprintf("prefill%d", i), Arrival: time.Duration(50+100*i) * time.Millisecond,
			PromptTokens: 8000, MaxTokens: 2})
	}
	maxGap := func(tl Timeline) time.Duration {
		var g time.Duration
		for i := 1; i < len(tl.Emissions); i++ {
			g = max(g, tl.Emissions[i].At-tl.Emissions[i-1].At)
		}
		return g
	}
	colo, err := Simulate(reqs, Config{})
	if err != nil {
		t.Fatal(err)
	}
	dis, err := Simulate(reqs, Config{Disaggregated: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, tl := range dis.Timelines {
		if !tl.Done || tl.OutputTokens != reqs[i].MaxTokens || tl.KVTransfer <= 0 {
			t.Fatalf("%s: %+v", tl.ID, tl)
		}
		// The second token comes after the KV transfer.
		if tl.Emissions[1].At-tl.Emissions[0].At < tl.KVTransfer {
			t.Fatalf("%s: second token %v after the first, before the %v transfer finished", tl.ID, tl.Emissions[1].At-tl.Emissions[0].At, tl.KVTransfer)
		}
	}
	gc, gd := maxGap(colo.Timelines[0]), maxGap(dis.Timelines[0])
	if gd*3 > gc {
		t.Fatalf("decode max gap %v disaggregated vs %v colocated: want prefill interference removed", gd, gc)
	}
	if dis.Stats.PromptTokens != colo.Stats.PromptTokens || dis.Stats.GenerationTokens != colo.Stats.GenerationTokens {
		t.Fatalf("token counts differ: %+v vs %+v", dis.Stats, colo.Stats)
	}
}

func TestAbortFreesBlocks(t *testing.T) {
	r, err := Config{NumBlocks: 100}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	c := r.newCore()
	c.keepDone = true
	a := &seq{tl: &Timeline{ID: "a"}, promptTokens: 64, target: 50}
	b := &seq{tl: &Timeline{ID: "b"}, promptTokens: 64, target: 50}
	w := &seq{tl: &Timeline{ID: "w"}, promptTokens: 64, target: 50}
	c.maxSeqs = 2
	for _, s := range []*seq{a, b, w} {
		c.submit(s)
	}
	for i := 0; i < 3; i++ {
		d, _ := c.plan()
		c.complete(c.now+d, d)
	}
	used := c.pool.used()
	c.abort(a) // running: dropped before the next step
	c.abort(w) // waiting: dropped at once
	if !w.tl.Done || w.tl.FinishReason != "abort" || a.tl.Done {
		t.Fatalf("after abort: w %+v a %+v", w.tl, a.tl)
	}
	d, _ := c.plan()
	if !a.tl.Done || a.tl.FinishReason != "abort" || len(c.running) != 1 || c.pool.used() >= used {
		t.Fatalf("running %d, blocks %d -> %d, a %+v", len(c.running), used, c.pool.used(), a.tl)
	}
	c.complete(c.now+d, d)
	if len(c.done) != 2 {
		t.Fatalf("done %d", len(c.done))
	}
}

func TestBlockPoolLRU(t *testing.T) {
	p := newBlockPool(4)
	var got []int32
	for i := 0; i < 4; i++ {
		b, ok := p.alloc()
		if !ok {
			t.Fatal("alloc failed")
		}
		got = append(got, b)
	}
	if _, ok := p.alloc(); ok {
		t.Fatal("allocated a fifth block of four")
	}
	p.register(got[0], 11)
	p.register(got[1], 22)
	p.release(got[0]) // cached: tail
	p.release(got[1]) // cached: tail, after 0
	p.release(got[2]) // uncached: head
	if b, _ := p.alloc(); b != got[2] {
		t.Fatalf("reused %d before the uncached block %d", b, got[2])
	}
	if b, ok := p.lookup(22); !ok || b != got[1] || p.ref[b] != 1 {
		t.Fatal("cached block 22 not found")
	}
	// The next allocation evicts the least recently freed cached block (11).
	if b, _ := p.alloc(); b != got[0] || p.cachedBlocks() != 1 {
		t.Fatalf("evicted %d, cached %d", b, p.cachedBlocks())
	}
	if _, ok := p.lookup(11); ok {
		t.Fatal("evicted hash still found")
	}
}

func TestTimelineStoreBounded(t *testing.T) {
	s := newTimelineStore(2)
	var tls []*Timeline
	for i := 0; i < 4; i++ {
		tl := &Timeline{ID: fmt.Sprint(i)}
		tls = append(tls, tl)
		s.add(tl)
	}
	for _, tl := range tls {
		tl.Done = true
		s.finished(tl)
	}
	for i, want := range []bool{false, false, true, true} {
		if _, ok := s.get(fmt.Sprint(i)); ok != want {
			t.Fatalf("timeline %d kept = %v", i, ok)
		}
	}
}

func TestDraftModelAndQuantizationChangeStepTime(t *testing.T) {
	one := []SimRequest{{ID: "x", PromptTokens: 512, MaxTokens: 200}}
	itl := func(cfg Config) time.Duration {
		t.Helper()
		res, err := Simulate(one, cfg)
		if err != nil {
			t.Fatal(err)
		}
		tl := res.Timelines[0]
		return (tl.Finish - tl.Emissions[0].At) / time.Duration(tl.OutputTokens-1)
	}
	bf16, fp8 := itl(Config{}), itl(Config{WeightDtype: "fp8"})
	if fp8 >= bf16 {
		t.Fatalf("fp8 weights %v per token, bf16 %v: want faster", fp8, bf16)
	}
	free, drafted := itl(Config{SpecK: 4, SpecAlpha: 0.8}), itl(Config{SpecK: 4, SpecAlpha: 0.8, SpecDraftModel: "llama-3.2-1b"})
	if !(free < drafted && drafted < bf16) {
		t.Fatalf("per-token time: free drafts %v, 1B draft model %v, no speculation %v", free, drafted, bf16)
	}
}

func TestBatchingMultipliesDecodeThroughput(t *testing.T) {
	// Decode throughput (tokens per simulated second over the decode phase) of 64 concurrent
	// sequences of 1k context against one sequence.
	throughput := func(n int) float64 {
		reqs := make([]SimRequest, n)
		for i := range reqs {
			reqs[i] = SimRequest{ID: fmt.Sprint(i), PromptTokens: 1024, MaxTokens: 129}
		}
		res, err := Simulate(reqs, Config{})
		if err != nil {
			t.Fatal(err)
		}
		var start, end time.Duration
		for i, tl := range res.Timelines {
			if i == 0 || tl.Emissions[0].At > start {
				start = tl.Emissions[0].At
			}
			end = max(end, tl.Finish)
		}
		return float64(n*128) / (end - start).Seconds()
	}
	one, batch := throughput(1), throughput(64)
	if batch < 20*one {
		t.Fatalf("64-way decode %.0f tok/s vs single %.0f tok/s: want many times more", batch, one)
	}
	t.Logf("decode throughput: 1 seq %.0f tok/s, 64 seqs %.0f tok/s", one, batch)
}

func TestHashIDsMooncakeSemantics(t *testing.T) {
	// 100-token hash blocks (not a multiple of the 16-token KV block): [1,2] and [1,2,3] share
	// the 200 tokens of ids 1 and 2 (12 whole KV blocks = 192 tokens); [2] shares nothing with
	// [1,2] although both contain id 2; a partial last block shares as far as both reach.
	reqs := []SimRequest{
		{ID: "a", PromptTokens: 200, HashIDs: []int64{1, 2}, MaxTokens: 2},
		{ID: "b", Arrival: time.Second, PromptTokens: 300, HashIDs: []int64{1, 2, 3}, MaxTokens: 2},
		{ID: "c", Arrival: 2 * time.Second, PromptTokens: 100, HashIDs: []int64{2}, MaxTokens: 2},
		{ID: "d", Arrival: 3 * time.Second, PromptTokens: 260, HashIDs: []int64{1, 2, 3}, MaxTokens: 2},
	}
	res, err := Simulate(reqs, Config{HashIDTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, tl := range res.Timelines {
		got = append(got, tl.CachedTokens)
	}
	// d (260 tokens) hits b's blocks up to its last full block before its last token: 256.
	if !slices.Equal(got, []int{0, 192, 0, 256}) {
		t.Fatalf("cached tokens %v, want [0 192 0 256]", got)
	}
}
