package gssapi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// SASLServer is the server-side interface of internal/sasl, which this package implements.
type SASLServer interface {
	Step(response []byte) (challenge []byte, err error)
	Complete() bool
	AuthorizationID() string
}

var (
	_ SASLServer = (*Server)(nil)
	_ SASLServer = (*Client)(nil)
)

const (
	testRealm   = "EXAMPLE.COM"
	testService = "zookeeper/localhost"
)

// memKeytab is an in-memory keytab for principal (name@realm) with a key from password.
func memKeytab(t testing.TB, name, password string, kvno uint8) *keytab.Keytab {
	t.Helper()
	kt := keytab.New()
	if err := kt.AddEntry(name, testRealm, password, time.Now(), kvno, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	return kt
}

// forged is an AP-REQ made without a KDC: a ticket encrypted with the service keytab's key.
type forged struct {
	token   []byte
	session types.EncryptionKey
	auth    types.Authenticator
}

// forgeAPReq makes the initial token of client "user@EXAMPLE.COM" for testService with a
// ticket valid from start to end.
func forgeAPReq(t testing.TB, kt *keytab.Keytab, kvno int, start, end time.Time, mutual bool) forged {
	t.Helper()
	cname := types.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, "user")
	sname := types.NewPrincipalName(nametype.KRB_NT_SRV_INST, testService)
	tkt, session, err := messages.NewTicket(cname, testRealm, sname, testRealm, types.NewKrbFlags(), kt,
		etypeID.AES256_CTS_HMAC_SHA1_96, kvno, start, start, end, end)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := types.NewAuthenticator(testRealm, cname)
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.GenerateSeqNumberAndSubKey(session.KeyType, 32); err != nil {
		t.Fatal(err)
	}
	f := gssapi.ContextFlagInteg
	if mutual {
		f |= gssapi.ContextFlagMutual
	}
	ck := make([]byte, 24)
	binary.LittleEndian.PutUint32(ck, 16)
	binary.LittleEndian.PutUint32(ck[20:], uint32(f))
	auth.Cksum = types.Checksum{CksumType: chksumtype.GSSAPI, Checksum: ck}
	req, err := messages.NewAPReq(tkt, session, auth)
	if err != nil {
		t.Fatal(err)
	}
	if mutual {
		types.SetFlag(&req.APOptions, flags.APOptionMutualRequired)
	}
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return forged{token: frameToken(tokAPReq, b), session: session, auth: auth}
}

// finalToken is the client's wrapped answer to the server's offer for a forged context.
func (f forged) finalToken(t testing.TB, layers byte, authzID string) []byte {
	t.Helper()
	b, err := wrap(layerMessage{layers: layers, authzID: authzID}.marshal(), wrapKey{key: f.auth.SubKey}, false, uint64(f.auth.SeqNumber))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// exchange runs a client against a server until the server completes or either fails.
func exchange(c *Client, s SASLServer) error {
	msg, err := c.Step(nil)
	if err != nil {
		return fmt.Errorf("client start: %w", err)
	}
	for range 10 {
		chal, err := s.Step(msg)
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		if s.Complete() {
			if chal != nil {
				return errors.New("server completed with a challenge")
			}
			if !c.Complete() {
				return errors.New("server completed before the client")
			}
			return nil
		}
		if msg, err = c.Step(chal); err != nil {
			return fmt.Errorf("client: %w", err)
		}
	}
	return errors.New("exchange did not end in 10 rounds")
}
