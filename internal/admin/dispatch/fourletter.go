package dispatch

import "github.com/zkd-io/zkd/internal/admin"

// FourLetter answers a four-letter word from what b reports. stmk, which reads an argument
// from the connection, and the whitelist, checked before it, are the connection's.
func FourLetter(b admin.Backend, cmd string) string {
	switch cmd {
	case "ruok":
		return admin.Ruok
	case "isro":
		serving, ro := b.ReadOnly()
		if !serving {
			return notServing(cmd)
		}
		return admin.Isro(ro)
	case "gtmk":
		return admin.Gtmk(b.TraceMask())
	case "envi":
		return admin.Envi(admin.Env(envInfo()))
	case "conf":
		d, l := dirSizes(b.Info())
		text, ok := b.ConfText(d, l)
		if !ok {
			return notServing(cmd)
		}
		return text
	case "dirs":
		return admin.Dirs(dirSizes(b.Info()))
	case "crst":
		b.ResetConnStats()
		return admin.Crst
	case "srst":
		b.ResetServerStats()
		return admin.Srst
	case "hash":
		return admin.Hash(nil)
	case "srvr":
		// One small core step; not rationed, monitoring polls these.
		st, ok := b.Stats()
		if !ok {
			return notServing(cmd)
		}
		return admin.Srvr(withFDs(st))
	case "mntr":
		st, ok := b.Monitor()
		if !ok {
			return notServing(cmd)
		}
		return admin.Mntr(withFDs(st))
	case "stat", "cons", "wchs", "wchc", "wchp", "dump":
	default:
		return ""
	}
	release, ok := b.Builder()
	if !ok {
		return notServing(cmd)
	}
	defer release()
	switch cmd {
	case "stat":
		st, conns, ok := b.StatConns()
		if !ok {
			return notServing(cmd)
		}
		return admin.Stat(withFDs(st), conns)
	case "cons":
		conns, ok := b.Conns()
		if !ok {
			return notServing(cmd)
		}
		return admin.Cons(conns)
	case "dump":
		d, ok := b.Dump()
		if !ok {
			return notServing(cmd)
		}
		return admin.Dump(d)
	}
	v, ok := b.Watches()
	if !ok {
		return notServing(cmd)
	}
	switch cmd {
	case "wchs":
		return admin.Wchs(v.Summary())
	case "wchc":
		return admin.WchcSorted(v.BySession())
	}
	return admin.WchpSorted(v.ByPath())
}

// notServing is cmd's answer when the server is not serving or stopped while answering.
func notServing(cmd string) string {
	if t, ok := admin.NotServing(cmd); ok {
		return t
	}
	return admin.NotServingMsg + "\n"
}
