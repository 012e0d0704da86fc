// Java's own SASL GSSAPI server (GssKrb5Server), created the way ZooKeeper's
// ZooKeeperSaslServer creates it: log in with the JAAS section "Server", protocol "zookeeper",
// host "localhost", authorize when the authorization id is the authentication id. Messages over
// stdin/stdout, one per line: the test sends "C <base64>" (a client response), this answers
// "S <base64>" (a challenge), then "DONE <authorization id>" once complete, or "ERR <message>".
// Run with: java SaslGssapiServer.java
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.security.PrivilegedExceptionAction;
import java.util.Base64;
import javax.security.auth.Subject;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.CallbackHandler;
import javax.security.auth.login.LoginContext;
import javax.security.sasl.AuthorizeCallback;
import javax.security.sasl.Sasl;
import javax.security.sasl.SaslServer;

public class SaslGssapiServer {
    public static void main(String[] args) throws Exception {
        LoginContext lc = new LoginContext("Server");
        lc.login();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        CallbackHandler cbh = callbacks -> {
            for (Callback cb : callbacks) {
                if (cb instanceof AuthorizeCallback) {
                    AuthorizeCallback ac = (AuthorizeCallback) cb;
                    ac.setAuthorized(ac.getAuthenticationID().equals(ac.getAuthorizationID()));
                    ac.setAuthorizedID(ac.getAuthorizationID());
                }
            }
        };
        Subject.doAs(lc.getSubject(), (PrivilegedExceptionAction<Void>) () -> {
            SaslServer ss = Sasl.createSaslServer("GSSAPI", "zookeeper", "localhost", null, cbh);
            for (int i = 0; i < 10; i++) {
                String line = in.readLine();
                if (line == null) {
                    throw new IllegalStateException("client went away");
                }
                byte[] chal;
                try {
                    chal = ss.evaluateResponse(Base64.getDecoder().decode(line.substring(1).trim()));
                } catch (Exception e) {
                    System.out.println("ERR " + e);
                    System.out.flush();
                    return null;
                }
                if (ss.isComplete()) {
                    System.out.println("DONE " + ss.getAuthorizationID());
                    System.out.flush();
                    return null;
                }
                System.out.println("S " + Base64.getEncoder().encodeToString(chal == null ? new byte[0] : chal));
                System.out.flush();
            }
            throw new IllegalStateException("too many rounds");
        });
    }
}
