// Package api is the core of vfx's HTTP API, with the decisions of
// docs/api.md: routing (and the 405 answers), authentication (API keys,
// organisation keys, the operator token), error rendering (one table of
// codes, two shapes), request bodies, the one idempotent create-and-wait
// both job APIs use (BeginSubmission, with the pending-submission records
// and their sweeper), uploads, the URI and media checks, and the OpenAPI
// document. The generation API (package api/gen) and the product API
// (package api/product) are built on it: each registers its routes, its
// OpenAPI part, its part in billing and webhooks (package dispatch, which
// Dispatch hands them to) and its give-back on a Server. The command's
// wiring starts the background passes (RunUploadSweeper, and the product
// API's ledger reconciler) and the dispatcher.
//
// A Server holds no state of its own beyond its configuration: jobs live in
// the queue's "jobs" bucket, and the API's own records (callback URL,
// idempotency keys, the per-account job index, webhook delivery state) in
// NATS key-value buckets, so any number of API replicas can serve the same
// accounts. Accounts, keys, limits and billing are the account package's.
package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/dispatch"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/queue"
	"github.com/vfxrender/vfx/store"
)

// Accounts is what the API needs of the account service; *account.Service
// satisfies it.
type Accounts interface {
	Authenticate(ctx context.Context, secret string) (account.Principal, error)
	Allow(ctx context.Context, acct account.Account, class account.Class) (account.Decision, error)
	Peek(ctx context.Context, acct account.Account, class account.Class) (account.Decision, error)
	Reserve(ctx context.Context, acct account.Account, jobID string, cost float64, enforceConcurrency bool) error
	Settle(ctx context.Context, accountID, jobID string, charged bool, meter string, units float64, cost float64) error
	AbandonReservation(ctx context.Context, accountID, jobID string) error
	InFlight(ctx context.Context, accountID string) (int, error)
	Billing(ctx context.Context, accountID string) (account.Billing, error)
	GetAccount(ctx context.Context, id string) (account.Account, error)
	CreateAccount(ctx context.Context, in account.AccountInput) (account.Account, error)
	UpdateAccount(ctx context.Context, id string, p account.AccountPatch) (account.Account, error)
	CreateKey(ctx context.Context, accountID string, kind account.Kind) (account.Key, string, error)
	RevokeKey(ctx context.Context, keyID string) error
	WebhookSecret(ctx context.Context, accountID string) (string, error)

	// Organisations, teams and credits of the product API.
	CreateOrg(ctx context.Context, name string) (account.Org, error)
	GetOrg(ctx context.Context, id string) (account.Org, error)
	GetTeam(ctx context.Context, id string) (account.Team, error)
	CreateTeam(ctx context.Context, orgID, name string, budget *int64) (account.Team, error)
	CreateOrgKey(ctx context.Context, orgID, teamID string) (account.Key, string, error)
	SetProductEnabled(ctx context.Context, orgID, product string, enabled bool) (account.Org, error)
	SetModelConsent(ctx context.Context, orgID, model string, granted bool) (account.Org, error)
	OrgWebhookSecret(ctx context.Context, orgID string) (string, error)
	AddCredits(ctx context.Context, orgID string, amount int64) (account.OrgCredits, error)
	Credits(ctx context.Context, orgID string) (account.OrgCredits, error)
	ReserveCredits(ctx context.Context, jobID, orgID, teamID string, amount int64) (account.LedgerEntry, error)
	SettleCredits(ctx context.Context, jobID string, cost int64) (account.LedgerEntry, error)
	RefundCredits(ctx context.Context, jobID string) (account.LedgerEntry, error)
	Ledger(ctx context.Context, jobID string) (account.LedgerEntry, error)
	ReconcileCredits(ctx context.Context, orgID string, opts account.ReconcileOptions) (account.ReconcileReport, error)
}

var _ Accounts = (*account.Service)(nil)

// Defaults of Config.
const (
	// OutputURLTTL is the lifetime of signed output URLs (72 hours).
	OutputURLTTL = 72 * time.Hour
	// UploadURLTTL is the lifetime of presigned upload URLs (1 hour).
	UploadURLTTL = time.Hour
	// DefaultMaxBodyBytes caps a request body: a 50 MB inline data: URI is
	// about 66.7 MB of base64, plus the rest of the request.
	DefaultMaxBodyBytes int64 = 70 << 20
	// DefaultSubmitRetryFor is the default of Config.SubmitRetryFor.
	DefaultSubmitRetryFor = 10 * time.Second
	// DefaultVideoFramesEstimate is the frame count assumed for the cost
	// estimate of a video whose source is not at hand (the 240-frame cap).
	DefaultVideoFramesEstimate = 240
	// MaxIdempotencyKeyLen is the longest idempotency_key, in characters.
	MaxIdempotencyKeyLen = 256
	// MaxCallbackURLLen is the longest callback_url, in bytes.
	MaxCallbackURLLen = 2048
)

// KV bucket names the API owns.
const (
	BucketMeta  = "gen_meta"
	BucketIdem  = "gen_idem"
	BucketIndex = "gen_index"
)

// Config configures a Server. Queue, JetStream, Store and Accounts are
// required.
type Config struct {
	// Queue holds the job records and takes submissions.
	Queue *queue.Queue
	// JetStream holds the API's buckets (BucketMeta, BucketIdem, BucketIndex).
	JetStream jetstream.JetStream
	// Store signs output and upload URLs and holds uploads.
	Store store.Store
	// Accounts authenticates keys and keeps limits and billing.
	Accounts Accounts
	// Prices estimate job costs; nil means account.DefaultPrices().
	Prices account.PriceTable
	// AdminToken is the operator token of /admin/v1; empty disables the
	// operator API (every call gets 401).
	AdminToken string
	// AllowPrivateNetworks lets callback_url and https:// sources reach
	// loopback, private and link-local addresses (tests, development).
	AllowPrivateNetworks bool
	// AllowHTTPCallbacks accepts http:// callback URLs (development).
	AllowHTTPCallbacks bool
	// AllowHTTPSources accepts http:// source URIs (development); the
	// workers must be configured alike.
	AllowHTTPSources bool
	// SubmitRetryFor bounds how long a submission keeps trying to queue
	// its job while NATS fails (a server restart, a leader election)
	// before it answers 503; 0 means DefaultSubmitRetryFor.
	SubmitRetryFor time.Duration
	// MaxBodyBytes caps request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxInflightBodyBytes caps the request body bytes all requests hold
	// at once; a request whose body does not fit gets 503 with
	// Retry-After. 0 means DefaultMaxInflightBodyBytes.
	MaxInflightBodyBytes int64
	// MinBodyRate is the slowest average rate (bytes a second) at which an
	// API request body may arrive after MinBodyGrace; slower bodies get
	// 408 REQUEST_TIMEOUT. 0 means DefaultMinBodyRate.
	MinBodyRate int64
	// MinBodyGrace is the time a body gets before the rate counts; 0 means
	// DefaultMinBodyGrace.
	MinBodyGrace time.Duration
	// MaxOpenUploads is how many uploads an owner may have open (URL not
	// expired, not used by a job); 0 means DefaultMaxOpenUploads.
	MaxOpenUploads int
	// MaxUploadBytesPerDay caps the bytes of an owner's uploads of the last
	// 24 hours; 0 means DefaultMaxUploadBytesPerDay.
	MaxUploadBytesPerDay int64
	// UploadExpiry is when an upload no job used is deleted; 0 means
	// DefaultUploadExpiry.
	UploadExpiry time.Duration
	// UploadSweepEvery is the pause between expiry sweeps that
	// RunUploadSweeper runs; 0 means DefaultUploadSweepEvery, negative
	// turns them off.
	UploadSweepEvery time.Duration
	// Replicas of the API's buckets; 0 means 1.
	Replicas int
	// Resolver looks up host names of callback and source URLs; nil means
	// net.DefaultResolver.
	Resolver HostResolver
	// Logger receives request failures and the background passes' events;
	// nil logs nothing.
	Logger *zap.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// StreamEvery is how often an event stream (GET /v1/vfx/events) looks
	// at its page of jobs; 0 means DefaultStreamEvery.
	StreamEvery time.Duration
	// StreamMaxAge is how long one event stream lasts; 0 means
	// DefaultStreamMaxAge.
	StreamMaxAge time.Duration
	// MaxStreamsPerAccount is how many event streams an account may hold
	// open at once on this replica; 0 means DefaultMaxStreamsPerAccount.
	MaxStreamsPerAccount int
	// IdemClaimLease is how long an idempotency claim whose job record does
	// not exist may go without renewal (its owner renews it every third of
	// this while alive) before the next request with the same key and body
	// takes it over (see idem.go); 0 means DefaultIdemClaimLease.
	IdemClaimLease time.Duration
	// PendingGrace is how old the record of a submission in progress must
	// be, with no job record, before the sweeper gives back what it held
	// (see pending.go); 0 means DefaultPendingGrace. It must exceed
	// SubmitRetryFor.
	PendingGrace time.Duration
	// Instance names this Server in the idempotency claims it makes; ""
	// means a random name.
	Instance string
}

// Server is the HTTP API's core; the generation and product APIs
// (packages api/gen and api/product) register on it. Create it with New;
// it is safe for concurrent use. The exported fields are for the API packages
// built on it (read them; set ValidateJob only in tests): the
// configuration with its defaults filled in, the logger, the queue, the
// store and the account service.
type Server struct {
	Cfg      Config
	Log      *zap.Logger
	Queue    *queue.Queue
	Store    store.Store
	Acc      Accounts
	Prices   account.PriceTable
	mux      *http.ServeMux
	routes   []Route
	methods  *http.ServeMux // one pattern per route path, answering 405
	resolver *store.Resolver
	guard    *store.AddressGuard
	Now      func() time.Time
	Budget   *ByteBudget
	uploads  jetstream.KeyValue
	// idemWait bounds the wait for a job that a concurrent request with
	// the same idempotency_key is still creating (idemCreateWait).
	idemWait time.Duration
	// ValidateJob is job.Validate, the contract's field rules, run once per
	// submission of either API; a test wraps it to count the calls.
	ValidateJob job.Validator
	// docs add the parts of the other APIs to the OpenAPI document
	// (AddDoc); jobAPIs are their parts in billing and webhooks
	// (AddJobAPI).
	docs    []func(Obj)
	jobAPIs map[string]dispatch.API
	// giveBack gives back a dead submission's holdings, by kind, for the
	// other APIs (AddGiveBack).
	giveBack map[string]func(ctx context.Context, jobID string, ps PendingSub) error
	// pending holds the records of submissions in progress (BucketPending).
	pending jetstream.KeyValue
}

// idemCreateWait is how long a request waits for the job that a
// concurrent request with the same idempotency_key is still creating,
// before answering 503 with Retry-After.
const idemCreateWait = 15 * time.Second

// Route is one registered pattern, kept for the OpenAPI check and the
// 405 answers; Product marks the product API's routes (detail shape).
type Route struct {
	Method, Path string
	Product      bool
}

// RouteTable lists the registered API routes in the order of registration.
func (s *Server) RouteTable() []Route { return slices.Clone(s.routes) }

// New opens (creating when missing) the API's buckets and builds the
// Server's routes. ctx bounds the bucket set-up.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Queue == nil || cfg.JetStream == nil || cfg.Store == nil || cfg.Accounts == nil {
		return nil, errors.New("api: Queue, JetStream, Store and Accounts are required")
	}
	s := &Server{Cfg: cfg, Queue: cfg.Queue, Store: cfg.Store, Acc: cfg.Accounts, Prices: cfg.Prices, Log: cfg.Logger, Now: cfg.Now,
		idemWait: idemCreateWait, ValidateJob: job.Validate}
	if s.Log == nil {
		s.Log = zap.NewNop()
	}
	if s.Prices == nil {
		s.Prices = account.DefaultPrices()
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Cfg.MaxBodyBytes <= 0 {
		s.Cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if s.Cfg.MaxInflightBodyBytes <= 0 {
		s.Cfg.MaxInflightBodyBytes = DefaultMaxInflightBodyBytes
	}
	s.Budget = &ByteBudget{limit: s.Cfg.MaxInflightBodyBytes}
	if s.Cfg.MinBodyRate <= 0 {
		s.Cfg.MinBodyRate = DefaultMinBodyRate
	}
	if s.Cfg.MinBodyGrace <= 0 {
		s.Cfg.MinBodyGrace = DefaultMinBodyGrace
	}
	if s.Cfg.MaxOpenUploads <= 0 {
		s.Cfg.MaxOpenUploads = DefaultMaxOpenUploads
	}
	if s.Cfg.MaxUploadBytesPerDay <= 0 {
		s.Cfg.MaxUploadBytesPerDay = DefaultMaxUploadBytesPerDay
	}
	if s.Cfg.UploadExpiry <= 0 {
		s.Cfg.UploadExpiry = DefaultUploadExpiry
	}
	if s.Cfg.UploadSweepEvery == 0 {
		s.Cfg.UploadSweepEvery = DefaultUploadSweepEvery
	}
	if s.Cfg.SubmitRetryFor <= 0 {
		s.Cfg.SubmitRetryFor = DefaultSubmitRetryFor
	}
	if s.Cfg.IdemClaimLease <= 0 {
		s.Cfg.IdemClaimLease = DefaultIdemClaimLease
	}
	if s.Cfg.PendingGrace <= 0 {
		s.Cfg.PendingGrace = DefaultPendingGrace
	}
	if s.Cfg.PendingGrace <= s.Cfg.SubmitRetryFor {
		return nil, fmt.Errorf("api: PendingGrace %s must exceed SubmitRetryFor %s", s.Cfg.PendingGrace, s.Cfg.SubmitRetryFor)
	}
	if s.Cfg.Instance == "" {
		s.Cfg.Instance = "api-" + randomToken(6)
	}
	if s.Cfg.Replicas <= 0 {
		s.Cfg.Replicas = 1
	}
	if s.Cfg.Resolver == nil {
		s.Cfg.Resolver = netResolver{}
	}
	var allow []string
	if cfg.AllowPrivateNetworks {
		allow = []string{"0.0.0.0/0", "::/0"}
	}
	s.guard = &store.AddressGuard{AllowHosts: allow}
	s.resolver = &store.Resolver{Store: cfg.Store, AllowHosts: allow, AllowHTTP: cfg.AllowHTTPSources}

	var err error
	if s.uploads, err = cfg.JetStream.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: BucketUploads, Description: "vfx uploads by owner", History: 1, Replicas: s.Cfg.Replicas,
		Storage: jetstream.FileStorage, TTL: DefaultUploadRecordTTL,
	}); err != nil {
		return nil, fmt.Errorf("api: bucket %s: %w", BucketUploads, err)
	}
	if s.pending, err = s.OpenBucket(ctx, BucketPending, "vfx submissions in progress: what each holds until its job exists"); err != nil {
		return nil, err
	}
	s.jobAPIs = map[string]dispatch.API{}
	s.giveBack = map[string]func(context.Context, string, PendingSub) error{}
	s.buildRoutes()
	return s, nil
}

// OpenBucket opens (creating when missing) the API's key-value bucket
// name, with one value a key and the Server's replicas; ctx bounds it.
// The other API packages open theirs with it.
func (s *Server) OpenBucket(ctx context.Context, name, desc string) (jetstream.KeyValue, error) {
	kv, err := s.Cfg.JetStream.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: name, Description: desc, History: 1, Replicas: s.Cfg.Replicas, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("api: bucket %s: %w", name, err)
	}
	return kv, nil
}

// NewClaims returns the idempotency claims kept in kv (see idem.go), with
// newID naming the job a new claim is for.
func (s *Server) NewClaims(kv jetstream.KeyValue, newID func() string) *Claims {
	return &Claims{kv: kv, lease: s.Cfg.IdemClaimLease, wait: s.idemWait, holder: s.Cfg.Instance,
		newID: newID, now: s.Now, log: s.Log.Named("idem")}
}

// AddDoc adds an API's part (its paths, schemas and webhooks) to the
// OpenAPI document that /v1/openapi.json serves; add runs on each request,
// on the core's skeleton (Server.OpenAPI), in the order of registration.
// Call it before serving.
func (s *Server) AddDoc(add func(doc Obj)) { s.docs = append(s.docs, add) }

// Handler returns the HTTP handler of every route.
func (s *Server) Handler() http.Handler { return s.mux }

// Mount adds another handler (such as the local store's signed URLs at
// store.FilesPath) to the Server's mux. Call it before serving.
func (s *Server) Mount(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Routes lists the registered API routes as "METHOD /path" patterns.
func (s *Server) Routes() []string {
	out := make([]string, len(s.routes))
	for i, r := range s.routes {
		out[i] = r.Method + " " + r.Path
	}
	return out
}

type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Handle registers an API route answered with errors through WriteError.
func (s *Server) Handle(method, path string, h HandlerFunc) {
	s.routes = append(s.routes, Route{Method: method, Path: path})
	s.buildMethodRoutes()
	s.mux.HandleFunc(method+" "+path, func(w http.ResponseWriter, r *http.Request) {
		r, release := s.withCharge(r)
		defer release()
		if err := h(w, r); err != nil {
			s.WriteError(w, r, err, EnvelopeShape)
		}
	})
}

func (s *Server) buildRoutes() {
	s.mux = http.NewServeMux()
	s.Handle("POST", "/v1/uploads", s.WithAnyKey(s.postUpload))
	s.Handle("GET", "/v1/openapi.json", s.openAPI)
	s.buildMethodRoutes()
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// A path of some route reached with another method: 405.
		if h, pattern := s.methods.Handler(r); pattern != "" {
			h.ServeHTTP(w, r)
			return
		}
		s.WriteError(w, r, NewError(CodeNotFound, "no route %s %s", r.Method, r.URL.Path), EnvelopeShape)
	})
}

// buildMethodRoutes registers, for each path of s.routes, a method-less
// pattern answering 405 METHOD_NOT_ALLOWED with an Allow header listing
// the path's methods (GET implies HEAD, as net/http serves HEAD through
// GET handlers). The main mux's catch-all consults it, so a wrong method
// on a known path is a 405 and an unknown path stays a 404. Product API
// paths answer in the detail shape, the others in the envelope.
func (s *Server) buildMethodRoutes() {
	s.methods = http.NewServeMux()
	type pathInfo struct {
		methods []string
		product bool
	}
	var order []string
	paths := map[string]*pathInfo{}
	for _, rt := range s.routes {
		pi := paths[rt.Path]
		if pi == nil {
			pi = &pathInfo{}
			paths[rt.Path] = pi
			order = append(order, rt.Path)
		}
		pi.methods = append(pi.methods, rt.Method)
		if rt.Method == http.MethodGet {
			pi.methods = append(pi.methods, http.MethodHead)
		}
		pi.product = pi.product || rt.Product
	}
	for _, path := range order {
		pi := paths[path]
		slices.Sort(pi.methods)
		allow := strings.Join(slices.Compact(pi.methods), ", ")
		product := pi.product
		s.methods.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			sh := EnvelopeShape
			if product {
				sh = DetailShape
			}
			s.WriteError(w, r, NewError(CodeMethodNotAllowed, "method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, allow), sh)
		})
	}
}

// principalKey is the context key of the authenticated principal.
type principalKey struct{}

func PrincipalOf(ctx context.Context) account.Principal {
	p, _ := ctx.Value(principalKey{}).(account.Principal)
	return p
}

// WithKey authenticates the x-api-key header: a missing, unknown or revoked
// key gets 401 INVALID_API_KEY; an organisation key of the product API gets
// 403 ACCOUNT_KEY_REQUIRED.
func (s *Server) WithKey(h HandlerFunc) HandlerFunc { return s.withKeyOf(h, false) }

// WithAnyKey is WithKey that also accepts organisation keys of the product
// API (uploads serve both families).
func (s *Server) WithAnyKey(h HandlerFunc) HandlerFunc { return s.withKeyOf(h, true) }

// authenticate resolves the request's x-api-key: 401 INVALID_API_KEY when
// it is missing, unknown or revoked.
func (s *Server) authenticate(r *http.Request) (account.Principal, error) {
	secret := strings.TrimSpace(r.Header.Get("x-api-key"))
	if secret == "" {
		return account.Principal{}, NewError(CodeInvalidAPIKey, "missing x-api-key header")
	}
	p, err := s.Acc.Authenticate(r.Context(), secret)
	if err != nil {
		if errors.Is(err, account.ErrInvalidKey) || errors.Is(err, account.ErrNotFound) {
			return account.Principal{}, NewError(CodeInvalidAPIKey, "invalid or revoked API key")
		}
		return account.Principal{}, fmt.Errorf("api: authenticate: %w", err)
	}
	return p, nil
}

func (s *Server) withKeyOf(h HandlerFunc, orgKeys bool) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.authenticate(r)
		if err != nil {
			return err
		}
		if p.Key.OrgID != "" && !orgKeys {
			return NewError(CodeAccountKeyRequired,
				"this organization key is for the product API (/v1/products, /v1/product-jobs); the generation API needs an account key")
		}
		return h(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}
}

// WithAdmin checks Authorization: Bearer <admin token> in constant time.
func (s *Server) WithAdmin(h HandlerFunc) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if s.Cfg.AdminToken == "" || !ok ||
			subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(s.Cfg.AdminToken)) != 1 {
			return NewError(CodeUnauthorized, "missing or invalid operator token")
		}
		return h(w, r)
	}
}

// limit applies the rate limit of class to personal keys; organization
// keys have none. Allowed decisions set the X-RateLimit-* headers on w.
func (s *Server) Limit(ctx context.Context, w http.ResponseWriter, class account.Class) error {
	p := PrincipalOf(ctx)
	if p.Key.Kind != account.KindPersonal {
		return nil
	}
	d, err := s.Acc.Allow(ctx, p.Account, class)
	if err != nil {
		return fmt.Errorf("api: rate limit: %w", err)
	}
	h := rateHeaders(d)
	if !d.Allowed {
		e := NewError(CodeRateLimitExceeded,
			"rate limit of %d %s requests per minute exceeded; retry in %d s", d.Limit, class, retrySeconds(d.RetryAfter))
		e.Header = h
		return e
	}
	for k, v := range h {
		w.Header()[k] = v
	}
	return nil
}
