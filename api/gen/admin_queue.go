package gen

import (
	"github.com/vfxrender/vfx/api"
	"net/http"
	"slices"
	"time"

	"github.com/vfxrender/vfx/queue"
)

// Bounds of GET /admin/v1/queue.
const (
	// adminQueueRunning is the most running jobs the answer lists.
	adminQueueRunning = 100
	// adminQueueDead is the most dead letters the answer lists.
	adminQueueDead = 20
)

// QueueStatus is the answer of GET /admin/v1/queue: the queue's depth,
// the workers seen running jobs, and the newest dead letters.
type QueueStatus struct {
	queue.Stats
	// Workers groups the running jobs by worker name.
	Workers []WorkerStatus `json:"workers"`
}

// WorkerStatus is one worker, as its claimed jobs show it.
type WorkerStatus struct {
	Name string `json:"name"`
	// State is "running" while the worker heartbeats its jobs, "silent"
	// once its latest heartbeat is older than two heartbeat periods (it
	// may have died; the job is redelivered after AckWait).
	State    string     `json:"state"`
	Jobs     []string   `json:"jobs"`
	LastSeen *time.Time `json:"last_seen,omitempty"`
}

// adminQueue answers GET /admin/v1/queue.
func (s *API) adminQueue(w http.ResponseWriter, r *http.Request) error {
	st, err := s.Queue.Stats(r.Context(), adminQueueRunning, adminQueueDead)
	if err != nil {
		return err
	}
	silentAfter := 2 * s.Queue.Config().RecordHeartbeat
	now := s.Now()
	by := map[string]*WorkerStatus{}
	out := QueueStatus{Stats: st, Workers: []WorkerStatus{}}
	for _, j := range st.Running {
		ws := by[j.Worker]
		if ws == nil {
			ws = &WorkerStatus{Name: j.Worker}
			by[j.Worker] = ws
		}
		ws.Jobs = append(ws.Jobs, j.JobID)
		seen := j.HeartbeatAt
		if seen == nil {
			seen = j.StartedAt
		}
		if seen != nil && (ws.LastSeen == nil || seen.After(*ws.LastSeen)) {
			ws.LastSeen = seen
		}
	}
	for _, ws := range by {
		ws.State = "running"
		if ws.LastSeen == nil || now.Sub(*ws.LastSeen) > silentAfter {
			ws.State = "silent"
		}
		out.Workers = append(out.Workers, *ws)
	}
	slices.SortFunc(out.Workers, func(a, b WorkerStatus) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	api.WriteJSON(w, http.StatusOK, out)
	return nil
}
