// Package queue is vfx's NATS JetStream layer: an embedded server for
// single-process deployments, the streams and consumers jobs flow through,
// job records kept in a JetStream key-value bucket and changed only by
// compare-and-swap, lifecycle events for the webhook dispatcher, and a
// dead-letter stream for jobs that could not be done.
//
// # Flow
//
// The API calls [Queue.Submit]: the job record is created in the "jobs"
// bucket (the job id is the key, so a second submission of the same id finds
// the first) and the job id is published to the work-queue stream VFX_JOBS
// with Nats-Msg-Id set to the id, so a double publish is stored once.
//
// A worker obtains a [Consumer] and either drives it with [Consumer.Run],
// which pulls one message only when one of its slots is free, heartbeats it,
// and settles it from the handler's result, or calls [Consumer.Next] itself
// and settles each [Delivery] with [Delivery.Done], [Delivery.Retry] or
// [Delivery.Fail].
//
// A job that is retried until the consumer's MaxDeliver is reached is left
// in VFX_JOBS by the server; the server's MAX_DELIVERIES advisory is captured
// by the stream VFX_ADVISORIES and [Queue.WatchMaxDeliveries] turns each one
// into a failed record, a dead-letter copy and the deletion of the message.
// The server sends that advisory only when a pull request is waiting, so a
// [Sweeper] also fails, without it, jobs whose message used up MaxDeliver
// and whose record went stale (no heartbeat for Config.StaleAfter), and
// non-terminal jobs whose message left VFX_JOBS. The record's
// compare-and-swap decides which of them fails a job.
//
// # Record states
//
// in_queue → processing → completed | failed, and in_queue → failed.
// processing → processing is allowed (progress, and a redelivered job taken
// over by another worker). Terminal records never change ([ErrTerminal]).
package queue
