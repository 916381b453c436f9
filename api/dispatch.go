package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/dispatch"
)

// Dispatch is the job APIs' part in billing and webhooks, by job kind,
// for dispatch.Config.APIs: the generation API's and those added with
// AddJobAPI. The command's wiring runs the dispatcher beside the Server.
func (s *Server) Dispatch() map[string]dispatch.API {
	return maps.Clone(s.jobAPIs)
}

// AddJobAPI adds another API's part in billing and webhooks, for its kind
// of job. Call it before Dispatch.
func (s *Server) AddJobAPI(kind string, a dispatch.API) { s.jobAPIs[kind] = a }

// ReadHook reads the meta record T of jobID in kv with its revision; ok is
// false when there is none or it does not decode (not ours to fix).
func ReadHook[T any](ctx context.Context, kv jetstream.KeyValue, jobID, what string) (*T, uint64, bool, error) {
	entry, err := kv.Get(ctx, jobID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("api: %s: %w", what, err)
	}
	var m T
	if err := json.Unmarshal(entry.Value(), &m); err != nil {
		return nil, 0, false, nil
	}
	return &m, entry.Revision(), true, nil
}

// SaveHook stores the meta record that holds h's state back at the
// revision it was read at.
func SaveHook(ctx context.Context, kv jetstream.KeyValue, jobID string, h dispatch.Hook) error {
	v, err := json.Marshal(h.Record)
	if err != nil {
		return err
	}
	_, err = kv.Update(ctx, jobID, v, h.Revision)
	return err
}
