// Package api is vfx's HTTP API: the generation API (jobs, uploads,
// account reads) and the product API, with the decisions of docs/api.md,
// the operator API under /admin/v1 and the OpenAPI document. The charging
// of finished jobs and the webhooks are package dispatch's (Dispatch hands
// it the two APIs' part); the background passes (RunLedgerReconciler,
// RunUploadSweeper) are started by the command's wiring.
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
	// LedgerReconcileEvery is the pause between two passes of the credit
	// ledger reconciler (ReconcileLedger) that RunLedgerReconciler runs; 0 means
	// DefaultLedgerReconcileEvery, negative turns it off.
	LedgerReconcileEvery time.Duration
	// LedgerReconcileGrace is how old a credit reservation must be before
	// the reconciler gives it up when its job record does not exist; 0
	// means DefaultLedgerReconcileGrace. It must exceed SubmitRetryFor.
	LedgerReconcileGrace time.Duration
	// LedgerReconcileLimit is the open ledger entries one pass examines;
	// 0 means DefaultLedgerReconcileLimit.
	LedgerReconcileLimit int
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

// Server is the HTTP API. Create it with New; it is safe for concurrent use.
type Server struct {
	cfg      Config
	log      *zap.Logger
	q        *queue.Queue
	st       store.Store
	acc      Accounts
	prices   account.PriceTable
	meta     jetstream.KeyValue
	idem     jetstream.KeyValue
	index    jetstream.KeyValue
	chunk    int // entries per chunk of the job index (DefaultIndexChunk)
	pmeta    jetstream.KeyValue
	pidem    jetstream.KeyValue
	products []*productDef
	mux      *http.ServeMux
	routes   []route
	methods  *http.ServeMux // one pattern per route path, answering 405
	resolver *store.Resolver
	guard    *store.AddressGuard
	now      func() time.Time
	budget   *byteBudget
	uploads  jetstream.KeyValue
	streams  *streams
	// idemWait bounds the wait for a job that a concurrent request with
	// the same idempotency_key is still creating (idemCreateWait).
	idemWait time.Duration
	// validateJob is job.Validate, the contract's field rules, run once per
	// submission of either API; a test wraps it to count the calls.
	validateJob job.Validator
	// gclaims and pclaims are the idempotency claims of the generation
	// and product APIs (buckets gen_idem and product_idem).
	gclaims, pclaims *idemClaims
	// pending holds the records of submissions in progress (BucketPending).
	pending jetstream.KeyValue
}

// idemCreateWait is how long a request waits for the job that a
// concurrent request with the same idempotency_key is still creating,
// before answering 503 with Retry-After.
const idemCreateWait = 15 * time.Second

// route is one registered pattern, kept for the OpenAPI check and the
// 405 answers; Product marks the product API's routes (detail shape).
type route struct {
	Method, Path string
	Product      bool
}

// New opens (creating when missing) the API's buckets and builds the
// Server's routes. ctx bounds the bucket set-up.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Queue == nil || cfg.JetStream == nil || cfg.Store == nil || cfg.Accounts == nil {
		return nil, errors.New("api: Queue, JetStream, Store and Accounts are required")
	}
	s := &Server{cfg: cfg, q: cfg.Queue, st: cfg.Store, acc: cfg.Accounts, prices: cfg.Prices, log: cfg.Logger, now: cfg.Now,
		chunk: DefaultIndexChunk, idemWait: idemCreateWait, streams: newStreams(), validateJob: job.Validate}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.prices == nil {
		s.prices = account.DefaultPrices()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.cfg.MaxBodyBytes <= 0 {
		s.cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if s.cfg.MaxInflightBodyBytes <= 0 {
		s.cfg.MaxInflightBodyBytes = DefaultMaxInflightBodyBytes
	}
	s.budget = &byteBudget{limit: s.cfg.MaxInflightBodyBytes}
	if s.cfg.MinBodyRate <= 0 {
		s.cfg.MinBodyRate = DefaultMinBodyRate
	}
	if s.cfg.MinBodyGrace <= 0 {
		s.cfg.MinBodyGrace = DefaultMinBodyGrace
	}
	if s.cfg.MaxOpenUploads <= 0 {
		s.cfg.MaxOpenUploads = DefaultMaxOpenUploads
	}
	if s.cfg.MaxUploadBytesPerDay <= 0 {
		s.cfg.MaxUploadBytesPerDay = DefaultMaxUploadBytesPerDay
	}
	if s.cfg.UploadExpiry <= 0 {
		s.cfg.UploadExpiry = DefaultUploadExpiry
	}
	if s.cfg.UploadSweepEvery == 0 {
		s.cfg.UploadSweepEvery = DefaultUploadSweepEvery
	}
	if s.cfg.SubmitRetryFor <= 0 {
		s.cfg.SubmitRetryFor = DefaultSubmitRetryFor
	}
	if s.cfg.LedgerReconcileEvery == 0 {
		s.cfg.LedgerReconcileEvery = DefaultLedgerReconcileEvery
	}
	if s.cfg.LedgerReconcileGrace <= 0 {
		s.cfg.LedgerReconcileGrace = DefaultLedgerReconcileGrace
	}
	if s.cfg.LedgerReconcileGrace <= s.cfg.SubmitRetryFor {
		return nil, fmt.Errorf("api: LedgerReconcileGrace %s must exceed SubmitRetryFor %s: a reservation whose job is still being submitted would be refunded",
			s.cfg.LedgerReconcileGrace, s.cfg.SubmitRetryFor)
	}
	if s.cfg.StreamEvery <= 0 {
		s.cfg.StreamEvery = DefaultStreamEvery
	}
	if s.cfg.StreamMaxAge <= 0 {
		s.cfg.StreamMaxAge = DefaultStreamMaxAge
	}
	if s.cfg.MaxStreamsPerAccount <= 0 {
		s.cfg.MaxStreamsPerAccount = DefaultMaxStreamsPerAccount
	}
	if s.cfg.IdemClaimLease <= 0 {
		s.cfg.IdemClaimLease = DefaultIdemClaimLease
	}
	if s.cfg.PendingGrace <= 0 {
		s.cfg.PendingGrace = DefaultPendingGrace
	}
	if s.cfg.PendingGrace <= s.cfg.SubmitRetryFor {
		return nil, fmt.Errorf("api: PendingGrace %s must exceed SubmitRetryFor %s", s.cfg.PendingGrace, s.cfg.SubmitRetryFor)
	}
	if s.cfg.Instance == "" {
		s.cfg.Instance = "api-" + randomToken(6)
	}
	if s.cfg.LedgerReconcileLimit <= 0 {
		s.cfg.LedgerReconcileLimit = DefaultLedgerReconcileLimit
	}
	if s.cfg.Replicas <= 0 {
		s.cfg.Replicas = 1
	}
	if s.cfg.Resolver == nil {
		s.cfg.Resolver = netResolver{}
	}
	var allow []string
	if cfg.AllowPrivateNetworks {
		allow = []string{"0.0.0.0/0", "::/0"}
	}
	s.guard = &store.AddressGuard{AllowHosts: allow}
	s.resolver = &store.Resolver{Store: cfg.Store, AllowHosts: allow, AllowHTTP: cfg.AllowHTTPSources}

	var err error
	open := func(name, desc string, history uint8) (jetstream.KeyValue, error) {
		kv, err := cfg.JetStream.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: name, Description: desc, History: history, Replicas: s.cfg.Replicas, Storage: jetstream.FileStorage,
		})
		if err != nil {
			return nil, fmt.Errorf("api: bucket %s: %w", name, err)
		}
		return kv, nil
	}
	if s.meta, err = open(BucketMeta, "vfx generation jobs: owner, callback, webhook state", 1); err != nil {
		return nil, err
	}
	if s.idem, err = open(BucketIdem, "vfx generation idempotency keys", 1); err != nil {
		return nil, err
	}
	if s.index, err = open(BucketIndex, "vfx generation jobs by account, newest first", 1); err != nil {
		return nil, err
	}
	if n, err := s.migrateIndex(ctx); err != nil {
		return nil, err
	} else if n > 0 {
		s.log.Info("job index: entries of the former layout moved into chunks", zap.Int("entries", n))
	}
	if s.uploads, err = cfg.JetStream.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: BucketUploads, Description: "vfx uploads by owner", History: 1, Replicas: s.cfg.Replicas,
		Storage: jetstream.FileStorage, TTL: DefaultUploadRecordTTL,
	}); err != nil {
		return nil, fmt.Errorf("api: bucket %s: %w", BucketUploads, err)
	}
	if s.pmeta, err = open(BucketProductMeta, "vfx product jobs: organisation, team, pricing, callback, webhook state", 1); err != nil {
		return nil, err
	}
	if s.pidem, err = open(BucketProductIdem, "vfx product idempotency keys", 1); err != nil {
		return nil, err
	}
	if s.pending, err = open(BucketPending, "vfx submissions in progress: what each holds until its job exists", 1); err != nil {
		return nil, err
	}
	claims := func(kv jetstream.KeyValue, newID func() string) *idemClaims {
		return &idemClaims{kv: kv, lease: s.cfg.IdemClaimLease, wait: s.idemWait, holder: s.cfg.Instance,
			newID: newID, now: s.now, log: s.log.Named("idem")}
	}
	s.gclaims, s.pclaims = claims(s.idem, newJobID), claims(s.pidem, newProductJobID)
	if s.products, err = catalogue(); err != nil {
		return nil, err
	}
	s.buildRoutes()
	return s, nil
}

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

type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle registers an API route answered with errors through writeError.
func (s *Server) handle(method, path string, h handlerFunc) {
	s.routes = append(s.routes, route{Method: method, Path: path})
	s.mux.HandleFunc(method+" "+path, func(w http.ResponseWriter, r *http.Request) {
		r, release := s.withCharge(r)
		defer release()
		if err := h(w, r); err != nil {
			s.writeError(w, r, err, envelopeShape)
		}
	})
}

func (s *Server) buildRoutes() {
	s.mux = http.NewServeMux()
	s.handle("POST", "/v1/vfx/generations", s.withKey(s.postGeneration))
	s.handle("GET", "/v1/vfx/generations", s.withKey(s.listGenerations))
	s.handle("GET", "/v1/vfx/generations/{job_id}", s.withKey(s.getGeneration))
	s.handle("GET", "/v1/vfx/events", s.withKey(s.streamGenerations))
	s.handle("POST", "/v1/uploads", s.withAnyKey(s.postUpload))
	s.handle("GET", "/v1/account/info", s.withKey(s.accountInfo))
	s.handle("GET", "/v1/account/billing", s.withKey(s.accountBilling))
	s.handle("GET", "/v1/openapi.json", s.openAPI)
	s.handle("POST", "/admin/v1/accounts", s.withAdmin(s.adminCreateAccount))
	s.handle("PATCH", "/admin/v1/accounts/{id}", s.withAdmin(s.adminUpdateAccount))
	s.handle("POST", "/admin/v1/accounts/{id}/keys", s.withAdmin(s.adminCreateKey))
	s.handle("DELETE", "/admin/v1/keys/{key_id}", s.withAdmin(s.adminRevokeKey))
	s.handle("GET", "/admin/v1/accounts/{id}/webhook-secret", s.withAdmin(s.adminWebhookSecret))
	s.handle("GET", "/admin/v1/queue", s.withAdmin(s.adminQueue))
	s.handleProduct("GET", "/v1/products", s.withOrgKey(s.listProducts))
	s.handleProduct("GET", "/v1/products/{product}/models", s.withOrgKey(s.listModels))
	s.handleProduct("POST", "/v1/products/{product}/estimate", s.withOrgKey(s.estimate))
	s.handleProduct("POST", "/v1/products/{product}/jobs", s.withOrgKey(s.postProductJob))
	s.handleProduct("GET", "/v1/product-jobs/{job_id}", s.withOrgKey(s.getProductJob))
	s.handleProduct("POST", "/v1/product-jobs/{job_id}/cancel", s.withOrgKey(s.cancelProductJob))
	s.handle("POST", "/admin/v1/orgs", s.withAdmin(s.adminCreateOrg))
	s.handle("GET", "/admin/v1/orgs/{id}", s.withAdmin(s.adminGetOrg))
	s.handle("POST", "/admin/v1/orgs/{id}/credits", s.withAdmin(s.adminAddCredits))
	s.handle("GET", "/admin/v1/orgs/{id}/credits", s.withAdmin(s.adminGetCredits))
	s.handle("POST", "/admin/v1/orgs/{id}/teams", s.withAdmin(s.adminCreateTeam))
	s.handle("POST", "/admin/v1/orgs/{id}/keys", s.withAdmin(s.adminCreateOrgKey))
	s.handle("PUT", "/admin/v1/orgs/{id}/products/{product}", s.withAdmin(s.adminSetProduct))
	s.handle("PUT", "/admin/v1/orgs/{id}/models/{model_id}/consent", s.withAdmin(s.adminSetConsent))
	s.handle("GET", "/admin/v1/orgs/{id}/webhook-secret", s.withAdmin(s.adminOrgWebhookSecret))
	s.buildMethodRoutes()
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// A path of some route reached with another method: 405.
		if h, pattern := s.methods.Handler(r); pattern != "" {
			h.ServeHTTP(w, r)
			return
		}
		s.writeError(w, r, newError(CodeNotFound, "no route %s %s", r.Method, r.URL.Path), envelopeShape)
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
			sh := envelopeShape
			if product {
				sh = detailShape
			}
			s.writeError(w, r, newError(CodeMethodNotAllowed, "method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, allow), sh)
		})
	}
}

// principalKey is the context key of the authenticated principal.
type principalKey struct{}

func principalOf(ctx context.Context) account.Principal {
	p, _ := ctx.Value(principalKey{}).(account.Principal)
	return p
}

// withKey authenticates the x-api-key header: a missing, unknown or revoked
// key gets 401 INVALID_API_KEY; an organisation key of the product API gets
// 403 ACCOUNT_KEY_REQUIRED.
func (s *Server) withKey(h handlerFunc) handlerFunc { return s.withKeyOf(h, false) }

// withAnyKey is withKey that also accepts organisation keys of the product
// API (uploads serve both families).
func (s *Server) withAnyKey(h handlerFunc) handlerFunc { return s.withKeyOf(h, true) }

// authenticate resolves the request's x-api-key: 401 INVALID_API_KEY when
// it is missing, unknown or revoked.
func (s *Server) authenticate(r *http.Request) (account.Principal, error) {
	secret := strings.TrimSpace(r.Header.Get("x-api-key"))
	if secret == "" {
		return account.Principal{}, newError(CodeInvalidAPIKey, "missing x-api-key header")
	}
	p, err := s.acc.Authenticate(r.Context(), secret)
	if err != nil {
		if errors.Is(err, account.ErrInvalidKey) || errors.Is(err, account.ErrNotFound) {
			return account.Principal{}, newError(CodeInvalidAPIKey, "invalid or revoked API key")
		}
		return account.Principal{}, fmt.Errorf("api: authenticate: %w", err)
	}
	return p, nil
}

func (s *Server) withKeyOf(h handlerFunc, orgKeys bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.authenticate(r)
		if err != nil {
			return err
		}
		if p.Key.OrgID != "" && !orgKeys {
			return newError(CodeAccountKeyRequired,
				"this organization key is for the product API (/v1/products, /v1/product-jobs); the generation API needs an account key")
		}
		return h(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}
}

// withAdmin checks Authorization: Bearer <admin token> in constant time.
func (s *Server) withAdmin(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if s.cfg.AdminToken == "" || !ok ||
			subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(s.cfg.AdminToken)) != 1 {
			return newError(CodeUnauthorized, "missing or invalid operator token")
		}
		return h(w, r)
	}
}

// limit applies the rate limit of class to personal keys; organization
// keys have none. Allowed decisions set the X-RateLimit-* headers on w.
func (s *Server) limit(ctx context.Context, w http.ResponseWriter, class account.Class) error {
	p := principalOf(ctx)
	if p.Key.Kind != account.KindPersonal {
		return nil
	}
	d, err := s.acc.Allow(ctx, p.Account, class)
	if err != nil {
		return fmt.Errorf("api: rate limit: %w", err)
	}
	h := rateHeaders(d)
	if !d.Allowed {
		e := newError(CodeRateLimitExceeded,
			"rate limit of %d %s requests per minute exceeded; retry in %d s", d.Limit, class, retrySeconds(d.RetryAfter))
		e.Header = h
		return e
	}
	for k, v := range h {
		w.Header()[k] = v
	}
	return nil
}
