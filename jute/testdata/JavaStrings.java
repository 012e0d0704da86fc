// JavaStrings reads byte strings, one a line in hex ("-" for none), and prints each line
// followed by what ZooKeeper's jute makes of it: BinaryInputArchive.readString, then
// BinaryOutputArchive.writeString, in hex without the length. TestJavaStrings's golden file
// is its output:
//
//	go test ./jute -run JavaStrings -jute.regen-java
//
// which runs java -cp /usr/share/java/zookeeper-jute.jar testdata/JavaStrings.java.
import java.io.*;
import org.apache.jute.*;

public class JavaStrings {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String hex = line.equals("-") ? "" : line;
            byte[] b = new byte[hex.length() / 2];
            for (int i = 0; i < b.length; i++) {
                b[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
            }
            ByteArrayOutputStream framed = new ByteArrayOutputStream();
            new DataOutputStream(framed).writeInt(b.length);
            framed.write(b);
            String s = BinaryInputArchive.getArchive(new ByteArrayInputStream(framed.toByteArray())).readString("s");
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            BinaryOutputArchive.getArchive(out).writeString(s, "s");
            byte[] o = out.toByteArray();
            StringBuilder sb = new StringBuilder();
            for (int i = 4; i < o.length; i++) {
                sb.append(String.format("%02x", o[i] & 0xff));
            }
            System.out.println(line + " " + (sb.length() == 0 ? "-" : sb.toString()));
        }
    }
}
