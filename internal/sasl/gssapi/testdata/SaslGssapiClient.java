// Java's own SASL GSSAPI client (GssKrb5Client), driven the way ZooKeeper's
// ZooKeeperSaslClient drives it: log in with the JAAS section "Client", create the client for
// protocol "zookeeper" and host "localhost", send the initial response, then evaluate each
// server token. Messages go over stdin/stdout, one per line: "C <base64>" is a client
// response, the test answers "S <base64>" (a server challenge) or "OK" (server complete).
// Run with: java SaslGssapiClient.java [mutual]
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.security.PrivilegedExceptionAction;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import javax.security.auth.Subject;
import javax.security.auth.login.LoginContext;
import javax.security.sasl.Sasl;
import javax.security.sasl.SaslClient;

public class SaslGssapiClient {
    public static void main(String[] args) throws Exception {
        Map<String, String> props = new HashMap<>();
        if (args.length > 0 && args[0].equals("mutual")) {
            props.put(Sasl.SERVER_AUTH, "true");
        }
        LoginContext lc = new LoginContext("Client");
        lc.login();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        Subject.doAs(lc.getSubject(), (PrivilegedExceptionAction<Void>) () -> {
            SaslClient sc = Sasl.createSaslClient(new String[] {"GSSAPI"}, null, "zookeeper", "localhost", props, null);
            byte[] resp = sc.hasInitialResponse() ? sc.evaluateChallenge(new byte[0]) : new byte[0];
            for (int i = 0; i < 10; i++) {
                System.out.println("C " + Base64.getEncoder().encodeToString(resp == null ? new byte[0] : resp));
                System.out.flush();
                String line = in.readLine();
                if (line == null) {
                    throw new IllegalStateException("server went away");
                }
                if (line.equals("OK")) {
                    System.out.println("DONE " + sc.isComplete());
                    System.out.flush();
                    return null;
                }
                resp = sc.evaluateChallenge(Base64.getDecoder().decode(line.substring(2)));
            }
            throw new IllegalStateException("too many rounds");
        });
    }
}
