// SaslPeer runs the JDK's own DIGEST-MD5 mechanism (com.sun.security.sasl.digest), set up as
// ZooKeeper sets it up, and the JDK's JAAS configuration parser, for the Go tests to compare
// against. Run with the JDK's source launcher (java SaslPeer.java MODE ...); names and
// passwords are given in hex of their UTF-8 so no locale is involved.
//
//   server HEXUSER=HEXPASS...  reads lines: "new" starts a fresh server ("OK"); otherwise a
//                              client token in hex ("-" for empty), answered by
//                              "TOK <hex>", "DONE <hex> <hex authorization id>" (complete)
//                              or "ERR <message>".
//   client HEXUSER HEXPASS SERVICE HOST
//                              prints "TOK -" (the opening empty token), then answers each
//                              server token read as "TOK <hex>", "DONE" or "ERR <message>".
//   kerberos [R HEXRULES HEXNAME...]...
//                              (needs ZooKeeper's jar on the class path) prints "REALM <hex
//                              default realm>"; per R, sets zookeeper.security.auth_to_local
//                              to the rules and prints "RULES" (or "ERR <exception class>");
//                              per name "OK <hex short name> <hex host> <hex realm>" (null
//                              parts as "null") or "ERR <exception class>"; then "END".
//   jaas FILE...               prints, per file, "FILE <n>" then "SECTION <name>",
//                              "MODULE <class> <FLAG>", "OPTION <key>=<value>" lines (sorted,
//                              values in hex), or "ERR <message>"; then "END".
import java.io.*;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.URIParameter;
import java.util.*;
import javax.security.auth.callback.*;
import javax.security.auth.login.AppConfigurationEntry;
import javax.security.auth.login.Configuration;
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

    static String str(String hex) { return new String(unhex(hex), StandardCharsets.UTF_8); }

    static String msg(Exception e) { return String.valueOf(e.getMessage()).replace('\n', ' '); }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        PrintStream out = new PrintStream(System.out, true);
        switch (args[0]) {
        case "server": server(args, in, out); break;
        case "client": client(args, in, out); break;
        case "jaas": jaas(args, out); break;
        case "kerberos": kerberos(args, out); break;
        }
    }

    static void server(String[] args, BufferedReader in, PrintStream out) throws Exception {
        Map<String, String> users = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            users.put(str(kv[0]), str(kv[1]));
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
        SaslServer s = null;
        for (String line; (line = in.readLine()) != null; ) {
            line = line.trim();
            if (line.equals("new")) {
                user[0] = null;
                s = Sasl.createSaslServer("DIGEST-MD5", "zookeeper", "zk-sasl-md5", null, cbh);
                out.println("OK");
                continue;
            }
            try {
                byte[] tok = s.evaluateResponse(unhex(line));
                if (s.isComplete()) {
                    out.println("DONE " + hex(tok) + " " + hex(s.getAuthorizationID().getBytes(StandardCharsets.UTF_8)));
                } else {
                    out.println("TOK " + hex(tok));
                }
            } catch (Exception e) {
                out.println("ERR " + msg(e));
            }
        }
    }

    static void client(String[] args, BufferedReader in, PrintStream out) throws Exception {
        String name = str(args[1]), pass = str(args[2]);
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
                }
            }
        };
        try {
            // ZooKeeper's client asks to act as itself (authorizationId = username).
            SaslClient c = Sasl.createSaslClient(new String[] {"DIGEST-MD5"}, name, args[3], args[4], null, cbh);
            out.println("TOK -");
            for (String line; (line = in.readLine()) != null; ) {
                byte[] tok = c.evaluateChallenge(unhex(line.trim()));
                out.println(c.isComplete() ? "DONE" : "TOK " + hex(tok));
                if (c.isComplete()) return;
            }
        } catch (Exception e) {
            out.println("ERR " + msg(e));
        }
    }

    static String part(Object o) {
        return o == null ? "null" : hex(((String) o).getBytes(StandardCharsets.UTF_8));
    }

    // ZooKeeper's KerberosName through reflection, so this file compiles without its jar.
    static void kerberos(String[] args, PrintStream out) throws Exception {
        System.setProperty("zookeeper.security.auth_to_local", "DEFAULT");
        Class<?> kn = Class.forName("org.apache.zookeeper.server.auth.KerberosName");
        Object probe = kn.getConstructor(String.class).newInstance("x");
        out.println("REALM " + part(kn.getMethod("getDefaultRealm").invoke(probe)));
        for (int i = 1; i < args.length; i++) {
            if (args[i].equals("R")) {
                System.setProperty("zookeeper.security.auth_to_local", str(args[++i]));
                try {
                    kn.getMethod("setConfiguration").invoke(null);
                    out.println("RULES");
                } catch (java.lang.reflect.InvocationTargetException e) {
                    out.println("ERR " + e.getCause().getClass().getSimpleName());
                }
                continue;
            }
            try {
                Object k = kn.getConstructor(String.class).newInstance(str(args[i]));
                String shortName = (String) kn.getMethod("getShortName").invoke(k);
                out.println("OK " + part(shortName) + " " + part(kn.getMethod("getHostName").invoke(k)) + " "
                    + part(kn.getMethod("getRealm").invoke(k)));
            } catch (java.lang.reflect.InvocationTargetException e) {
                out.println("ERR " + e.getCause().getClass().getSimpleName());
            }
        }
        out.println("END");
    }

    static void jaas(String[] args, PrintStream out) throws Exception {
        for (int i = 1; i < args.length; i++) {
            out.println("FILE " + i);
            try {
                URI uri = new File(args[i]).toURI();
                Configuration cfg = Configuration.getInstance("JavaLoginConfig", new URIParameter(uri));
                // The JDK's Configuration has no list of names: the test names the
                // sections it wants in a comment on the file's first line, "// A B C".
                BufferedReader r = new BufferedReader(new FileReader(args[i], StandardCharsets.UTF_8));
                String first = r.readLine();
                r.close();
                String[] names = first.substring(2).trim().split(" ");
                for (String name : names) {
                    AppConfigurationEntry[] es = cfg.getAppConfigurationEntry(name);
                    if (es == null) continue;
                    out.println("SECTION " + name);
                    for (AppConfigurationEntry e : es) {
                        String flag = e.getControlFlag().toString().replace("LoginModuleControlFlag: ", "").toUpperCase();
                        out.println("MODULE " + e.getLoginModuleName() + " " + flag);
                        for (String k : new TreeSet<>(e.getOptions().keySet())) {
                            out.println("OPTION " + k + "=" + hex(((String) e.getOptions().get(k)).getBytes(StandardCharsets.UTF_8)));
                        }
                    }
                }
            } catch (Exception e) {
                Throwable c = e;
                while (c.getCause() != null) c = c.getCause();
                out.println("ERR " + String.valueOf(c.getMessage()).replace('\n', ' '));
            }
        }
        out.println("END");
    }
}
