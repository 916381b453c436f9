package gen

import (
	"context"
	"encoding/base64"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/queue"
)

// seedJob stores a generation job record of owner created at t (no
// record when orphan: an index entry of a submission that failed) and
// indexes it, as create does.
func (e *env) seedJob(ctx context.Context, owner string, t time.Time, orphan bool) string {
	e.T.Helper()
	id := api.NewJobID()
	if !orphan {
		if _, err := e.Q.Create(ctx, queue.Record{ID: id, Kind: queue.KindGeneration, Owner: owner,
			Request: []byte(`{"generation_type":"image","alpha_mode":"auto"}`), CreatedAt: t, ModifiedAt: t}); err != nil {
			e.T.Fatal(err)
		}
	}
	if err := e.gen.indexAdd(ctx, owner, t, id); err != nil {
		e.T.Fatal(err)
	}
	return id
}

// refPage is the former listing over the whole sorted suffix list: the
// reference the chunked index must reproduce exactly.
func refPage(sfx []string, exists map[string]bool, limit int, after string) (ids []string, next string) {
	start, found := slices.BinarySearch(sfx, after)
	if after != "" && found {
		start++
	}
	i := start
	for ; i < len(sfx) && len(ids) < limit; i++ {
		_, id, _ := strings.Cut(sfx[i], "_")
		if exists[id] {
			ids = append(ids, id)
		}
	}
	if i < len(sfx) && len(ids) > 0 {
		next = sfx[i-1]
	}
	return ids, next
}

// TestListIndexMatchesReference fills an account's index through every
// path (new jobs in order, jobs created earlier than indexed ones, equal
// times, a re-insert, orphan entries, entries of the former flat layout
// migrated by New) with small chunks, then checks every page of the list
// over HTTP, for several limits, against the former algorithm run on the
// sorted list of all entries: same jobs, same order, same token presence,
// tokens naming the same entry; and tokens of the former layout still work.
func TestListIndexMatchesReference(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	ctx := context.Background()
	e.gen.chunk = 4
	a, key := e.NewAccount(account.KindOrganization, account.AccountInput{})
	otherAcct, _ := e.NewAccount(account.KindOrganization, account.AccountInput{})
	acct := api.KeyPart(a.ID)
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var all []string // suffixes
	exists := map[string]bool{}
	sfxOf := map[string]string{}
	add := func(tm time.Time, orphan bool) string {
		id := e.seedJob(ctx, a.ID, tm, orphan)
		sfxOf[id] = indexSuffix(tm, id)
		all = append(all, indexSuffix(tm, id))
		exists[id] = !orphan
		return id
	}

	// Entries of the former flat layout, written before the index had
	// chunks, with records: migrated when a api.Server starts.
	for i := range 9 {
		tm := base.Add(time.Duration(i) * time.Second)
		id := api.NewJobID()
		if _, err := e.Q.Create(ctx, queue.Record{ID: id, Kind: queue.KindGeneration, Owner: a.ID, CreatedAt: tm, ModifiedAt: tm,
			Request: []byte(`{"generation_type":"image","alpha_mode":"auto"}`)}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.gen.index.Put(ctx, acct+"."+indexSuffix(tm, id), []byte(id)); err != nil {
			t.Fatal(err)
		}
		all = append(all, indexSuffix(tm, id))
		exists[id] = true
	}
	if _, err := newAPI(ctx, e.Cfg); err != nil { // a restart: migrates
		t.Fatal(err)
	}
	if kl, err := e.gen.index.ListKeysFiltered(ctx, acct+".*"); err != nil {
		t.Fatal(err)
	} else {
		for k := range kl.Keys() {
			if k != acct+".head" {
				t.Errorf("flat entry %s left after migration", k)
			}
		}
	}

	now := base.Add(time.Hour)
	var ids []string
	for i := range 60 {
		switch {
		case i%11 == 5: // created earlier than jobs already indexed (clock skew)
			add(now.Add(-time.Duration(rng.IntN(3600))*time.Second), false)
		case i%13 == 7: // the same instant as the previous job: ties by id
			add(now, false)
		case i%9 == 4:
			add(now, true) // orphan
		default:
			now = now.Add(time.Duration(1+rng.IntN(1000)) * time.Millisecond)
			ids = append(ids, add(now, false))
		}
	}
	// A burst at one instant: suffixes in random order (by id), so most
	// sort after the newest chunk's smallest.
	now = now.Add(time.Second)
	for range 12 {
		add(now, false)
	}
	// Older than everything, and a re-insert of an indexed job.
	add(base.Add(-time.Hour), false)
	for _, i := range []int{3, len(ids) - 1} {
		if err := e.gen.indexInsert(ctx, acct, sfxOf[ids[i]], ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Another account's job in this account's index cannot occur; another
	// account's own jobs must not show.
	e.seedJob(ctx, otherAcct.ID, now, false)
	slices.Sort(all)

	// The chunks are ordered: every suffix of chunk c+1 sorts before every
	// suffix of chunk c, and their union is the whole list.
	h, ok, err := e.gen.indexHeadOf(ctx, acct)
	if err != nil || !ok || h.Chunk < 10 {
		t.Fatalf("head %+v %v %v", h, ok, err)
	}
	var union []string
	prevMin := ""
	for c := 0; c <= h.Chunk; c++ {
		sfx, err := e.gen.chunkSuffixes(ctx, acct, c)
		if err != nil {
			t.Fatal(err)
		}
		if len(sfx) > 0 && prevMin != "" && sfx[len(sfx)-1] >= prevMin {
			t.Fatalf("chunk %d max %s not before chunk %d min %s", c, sfx[len(sfx)-1], c-1, prevMin)
		}
		if len(sfx) > 0 {
			prevMin = sfx[0]
		}
		union = append(union, sfx...)
	}
	slices.Sort(union)
	if !slices.Equal(union, all) {
		t.Fatalf("chunks hold %d entries, want %d", len(union), len(all))
	}

	list := func(limit int, token string) ([]string, string) {
		t.Helper()
		p := fmt.Sprintf("/v1/vfx/generations?limit=%d", limit)
		if token != "" {
			p += "&page_token=" + token
		}
		r := e.Do("GET", p, key, nil)
		if r.Status != 200 {
			t.Fatalf("list %s: %d %s", p, r.Status, r.Body)
		}
		m := r.JSON(t)
		var got []string
		for _, j := range m["jobs"].([]any) {
			got = append(got, j.(map[string]any)["id"].(string))
		}
		next, _ := m["next_page_token"].(string)
		return got, next
	}
	suffixOf := func(token string) string {
		b, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil || !strings.HasPrefix(string(b), acct+".") {
			t.Fatalf("token %q", token)
		}
		_, sfx := parsePageToken(string(b)[len(acct)+1:])
		return sfx
	}
	for _, limit := range []int{1, 2, 3, 4, 5, 7, 16, 100} {
		token, after, pages := "", "", 0
		for ; pages < 200; pages++ {
			got, next := list(limit, token)
			want, wantNext := refPage(all, exists, limit, after)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("limit %d page %d: %v, want %v", limit, pages, got, want)
			}
			if (next == "") != (wantNext == "") || next != "" && suffixOf(next) != wantNext {
				t.Fatalf("limit %d page %d: token %q, want after %q", limit, pages, next, wantNext)
			}
			if next == "" {
				break
			}
			token, after = next, wantNext
		}
		if pages == 200 {
			t.Fatalf("limit %d: no last page", limit)
		}
	}
	// Tokens of the former layout (A.<suffix>) still page from that entry.
	for _, i := range []int{0, 5, len(all) / 2, len(all) - 2} {
		old := base64.RawURLEncoding.EncodeToString([]byte(acct + "." + all[i]))
		got, _ := list(5, old)
		want, _ := refPage(all, exists, 5, all[i])
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("former token at %d: %v, want %v", i, got, want)
		}
	}
}

// TestIndexConcurrentInserts inserts from several goroutines at once (as
// several requests or replicas do) into one account with small chunks:
// no entry is lost and the chunks stay ordered.
func TestIndexConcurrentInserts(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	ctx := context.Background()
	e.gen.chunk = 3
	acct := api.KeyPart("acct_concurrent")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const workers, each = 4, 25
	errs := make(chan error, workers)
	sfxs := make([][]string, workers)
	for w := range workers {
		go func() {
			for i := range each {
				// Interleaved times, some out of order between workers.
				tm := base.Add(time.Duration(i*workers+(w*7)%workers) * time.Millisecond)
				id := fmt.Sprintf("vfx_w%di%d", w, i)
				sfxs[w] = append(sfxs[w], indexSuffix(tm, id))
				if err := e.gen.indexInsert(ctx, acct, indexSuffix(tm, id), id); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	for _, s := range sfxs {
		all = append(all, s...)
	}
	slices.Sort(all)
	h, ok, err := e.gen.indexHeadOf(ctx, acct)
	if err != nil || !ok || h.Chunk < 5 {
		t.Fatalf("head %+v %v %v", h, ok, err)
	}
	var union []string
	prevMin := ""
	for c := 0; c <= h.Chunk; c++ {
		sfx, err := e.gen.chunkSuffixes(ctx, acct, c)
		if err != nil {
			t.Fatal(err)
		}
		if len(sfx) > 0 && prevMin != "" && sfx[len(sfx)-1] >= prevMin {
			t.Fatalf("chunk %d max %s not before chunk %d min %s", c, sfx[len(sfx)-1], c-1, prevMin)
		}
		if len(sfx) > 0 {
			prevMin = sfx[0]
		}
		union = append(union, sfx...)
	}
	slices.Sort(union)
	if !slices.Equal(union, all) {
		t.Fatalf("chunks hold %d entries, want %d", len(union), len(all))
	}
}
