// SaslPeer runs the JDK's own DIGEST-MD5 mechanism (com.sun.security.sasl.digest), set up as
// ZooKeeper sets it up, so the Go tests can talk to it token by token. Run with the JDK's
// source launcher: java SaslPeer.java server USER=PASS... | client USER PASS SERVICE HOST.
// Protocol on stdin/stdout, one line each: the test writes the peer's token in hex ("-" for
// empty); the program answers "TOK <hex>" (or "TOK -"), then "DONE <authorization id>" once
// complete, or "ERR <message>" and exits.
import java.io.*;
import java.util.*;
import javax.security.auth.callback.*;
import javax.security.sasl.*;

public class SaslPeer {
    static String hex(byte[] b) {
        if (b == null || b.length == 0) return "-";
        StringBuilder s = new StringBuilder();
        for (byte x : b) s.append(String.format("%02x", x));
        return s.toString();
    }

    static byte[] unhex(String s) {
        if (s.equals("-")) return new byte[0];
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return b;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        PrintStream out = System.out;
        try {
            if (args[0].equals("server")) {
                Map<String, String> users = new HashMap<>();
                for (int i = 1; i < args.length; i++) {
                    int eq = args[i].indexOf('=');
                    users.put(args[i].substring(0, eq), args[i].substring(eq + 1));
                }
                String[] user = new String[1];
                // As ZooKeeper's SaslServerCallbackHandler (simple names: no Kerberos rules).
                CallbackHandler cbh = cbs -> {
                    for (Callback cb : cbs) {
                        if (cb instanceof NameCallback) {
                            NameCallback nc = (NameCallback) cb;
                            if (users.get(nc.getDefaultName()) != null) {
                                nc.setName(nc.getDefaultName());
                                user[0] = nc.getDefaultName();
                            }
                        } else if (cb instanceof PasswordCallback) {
                            if (users.containsKey(user[0])) ((PasswordCallback) cb).setPassword(users.get(user[0]).toCharArray());
                        } else if (cb instanceof RealmCallback) {
                            RealmCallback rc = (RealmCallback) cb;
                            rc.setText(rc.getDefaultText());
                        } else if (cb instanceof AuthorizeCallback) {
                            AuthorizeCallback ac = (AuthorizeCallback) cb;
                            ac.setAuthorized(true);
                            ac.setAuthorizedID(ac.getAuthenticationID());
                        }
                    }
                };
                SaslServer s = Sasl.createSaslServer("DIGEST-MD5", "zookeeper", "zk-sasl-md5", null, cbh);
                while (!s.isComplete()) {
                    String line = in.readLine();
                    if (line == null) return;
                    byte[] tok = s.evaluateResponse(unhex(line.trim()));
                    out.println("TOK " + hex(tok));
                }
                out.println("DONE " + s.getAuthorizationID());
            } else {
                String name = args[1], pass = args[2];
                // As ZooKeeper's SaslClientCallbackHandler.
                CallbackHandler cbh = cbs -> {
                    for (Callback cb : cbs) {
                        if (cb instanceof NameCallback) {
                            NameCallback nc = (NameCallback) cb;
                            nc.setName(nc.getDefaultName());
                        } else if (cb instanceof PasswordCallback) {
                            ((PasswordCallback) cb).setPassword(pass.toCharArray());
                        } else if (cb instanceof RealmCallback) {
                            RealmCallback rc = (RealmCallback) cb;
                            rc.setText(rc.getDefaultText());
                        } else if (cb instanceof AuthorizeCallback) {
                            AuthorizeCallback ac = (AuthorizeCallback) cb;
                            ac.setAuthorized(ac.getAuthenticationID().equals(ac.getAuthorizationID()));
                        }
                    }
                };
                SaslClient c = Sasl.createSaslClient(new String[] {"DIGEST-MD5"}, name, args[3], args[4], null, cbh);
                // ZooKeeper's client starts with an empty token (DIGEST-MD5 has no initial response).
                out.println("TOK -");
                while (!c.isComplete()) {
                    String line = in.readLine();
                    if (line == null) return;
                    byte[] tok = c.evaluateChallenge(unhex(line.trim()));
                    if (!c.isComplete() || (tok != null && tok.length > 0)) out.println("TOK " + hex(tok));
                }
                out.println("DONE " + name);
            }
        } catch (Exception e) {
            out.println("ERR " + e.getMessage().replace('\n', ' '));
        }
        out.flush();
    }
}
