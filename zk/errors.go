package zk

import (
	"errors"
	"fmt"

	"github.com/zkd-io/zkd/jute"
)

// Code is a ZooKeeper error code. Every code the server sends is returned as (wrapping) a
// Code, so errors.Is(err, ErrNoNode) holds both for the constants below and for any
// jute.Code value the server sent; errors.As(err, &code) extracts it.
type Code = jute.Code

// Server and client error codes. The client itself reports ErrConnectionLoss (the connection
// broke before the reply arrived; the request may or may not have been applied),
// ErrSessionExpired, ErrAuthFailed and ErrBadArguments (invalid path, mode or TTL).
const (
	ErrSystemError              = jute.ErrSystemError
	ErrRuntimeInconsistency     = jute.ErrRuntimeInconsistency
	ErrDataInconsistency        = jute.ErrDataInconsistency
	ErrConnectionLoss           = jute.ErrConnectionLoss
	ErrMarshallingError         = jute.ErrMarshallingError
	ErrUnimplemented            = jute.ErrUnimplemented
	ErrOperationTimeout         = jute.ErrOperationTimeout
	ErrBadArguments             = jute.ErrBadArguments
	ErrUnknownSession           = jute.ErrUnknownSession
	ErrNewConfigNoQuorum        = jute.ErrNewConfigNoQuorum
	ErrReconfigInProgress       = jute.ErrReconfigInProgress
	ErrAPIError                 = jute.ErrAPIError
	ErrNoNode                   = jute.ErrNoNode
	ErrNoAuth                   = jute.ErrNoAuth
	ErrBadVersion               = jute.ErrBadVersion
	ErrNoChildrenForEphemerals  = jute.ErrNoChildrenForEphemerals
	ErrNodeExists               = jute.ErrNodeExists
	ErrNotEmpty                 = jute.ErrNotEmpty
	ErrSessionExpired           = jute.ErrSessionExpired
	ErrInvalidCallback          = jute.ErrInvalidCallback
	ErrInvalidACL               = jute.ErrInvalidACL
	ErrAuthFailed               = jute.ErrAuthFailed
	ErrSessionMoved             = jute.ErrSessionMoved
	ErrNotReadOnly              = jute.ErrNotReadOnly
	ErrEphemeralOnLocalSession  = jute.ErrEphemeralOnLocalSession
	ErrNoWatcher                = jute.ErrNoWatcher
	ErrRequestTimeout           = jute.ErrRequestTimeout
	ErrReconfigDisabled         = jute.ErrReconfigDisabled
	ErrSessionClosedRequireSASL = jute.ErrSessionClosedRequireSASL
	ErrQuotaExceeded            = jute.ErrQuotaExceeded
	ErrThrottled                = jute.ErrThrottled
	// ErrListViewExpired is zkd's (paged-list): the view a listing's cursor names is gone;
	// start the listing again.
	ErrListViewExpired = jute.ErrListViewExpired
	// ErrWatchHistoryCompacted: the server no longer holds the changes since the zxid a
	// resumed watch named (AddWatchSince); re-read the state, then watch afresh.
	ErrWatchHistoryCompacted = jute.ErrWatchHistoryCompacted
	// ErrServerReplyTooLarge is zkd's (large-replies): the server refused a reply longer
	// than the limit this connection negotiated (SetMaxBuffer), or, for an extension's
	// request, than its jute.maxbuffer. The connection stays. errors.Is(err,
	// ErrReplyTooLarge) holds for it too.
	ErrServerReplyTooLarge = jute.ErrReplyTooLarge
)

// ErrReplyTooLarge is wrapped by the error of a request whose reply was longer than the
// client's limit (WithMaxBufferSize). The reply is read and dropped and the connection
// stays up, so retrying the request gets the same error, never a reconnect loop. The
// remedy is a larger limit, or a smaller reply (fewer children per node, smaller data).
var ErrReplyTooLarge = errors.New("zk: reply larger than the client's limit")

// ReplyTooLargeError is the error of a request whose reply was Size bytes, over Max.
type ReplyTooLargeError struct {
	Size, Max int
}

func (e *ReplyTooLargeError) Error() string {
	return fmt.Sprintf("zk: reply of %d bytes over the client's limit of %d (WithMaxBufferSize)", e.Size, e.Max)
}

func (e *ReplyTooLargeError) Unwrap() error { return ErrReplyTooLarge }

// ErrClosed is returned by operations on a client after Close.
var ErrClosed = errors.New("zk: client closed")

// OpError is the error of an operation: the operation, the path it was about (relative to
// the chroot) and the cause, which is a Code, ErrClosed, or the context's error.
type OpError struct {
	Op   string
	Path string
	Err  error
}

func (e *OpError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("zk: %s: %v", e.Op, trimPrefix(e.Err))
	}
	return fmt.Sprintf("zk: %s %s: %v", e.Op, e.Path, trimPrefix(e.Err))
}

func (e *OpError) Unwrap() error { return e.Err }

// Is makes the server's refusal of a reply over the limit (ErrServerReplyTooLarge) match
// ErrReplyTooLarge as well, the one error a caller checks whichever side refused.
func (e *OpError) Is(target error) bool {
	return target == ErrReplyTooLarge && errors.Is(e.Err, ErrServerReplyTooLarge)
}

// trimPrefix drops the "zk: " that Code errors carry, so messages do not repeat it.
func trimPrefix(err error) string {
	s := err.Error()
	if len(s) > 4 && s[:4] == "zk: " {
		return s[4:]
	}
	return s
}

// MultiError is the error of a failed Multi: no operation was applied. Index is the first
// operation that failed and Err its error (an *OpError wrapping the server's code).
// Results holds every operation's result, as the server reported it.
type MultiError struct {
	Index   int
	Err     error
	Results []OpResult
}

func (e *MultiError) Error() string {
	return fmt.Sprintf("zk: multi: op %d: %v", e.Index, trimPrefix(e.Err))
}

func (e *MultiError) Unwrap() error { return e.Err }

// connLoss is ErrConnectionLoss with its cause (an I/O error, a timeout, ...).
func connLoss(cause error) error {
	if cause == nil || errors.Is(cause, ErrConnectionLoss) {
		return ErrConnectionLoss
	}
	return fmt.Errorf("%w: %w", ErrConnectionLoss, cause)
}

// badArgs is ErrBadArguments with the reason the client refused the request.
func badArgs(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadArguments, fmt.Sprintf(format, args...))
}
