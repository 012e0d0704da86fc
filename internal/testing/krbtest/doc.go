// Package krbtest runs a throwaway MIT Kerberos KDC (krb5kdc, Debian's krb5-kdc) on a loopback
// port for tests: a realm EXAMPLE.COM in a temporary directory, with the principals
// zookeeper/localhost@EXAMPLE.COM (service keytab) and client@EXAMPLE.COM (keytab and
// password). Nothing outside the test's temporary directory is read or written: the KDC and the
// admin tools are pointed at their own files with KRB5_CONFIG and KRB5_KDC_PROFILE.
//
// The KDC listens on TCP only; the krb5.conf it writes for clients sets udp_preference_limit = 1
// so that MIT, Java and gokrb5 clients all use TCP. It is stopped by its PID when the test ends.
// When the Kerberos binaries are missing the test is skipped (or failed under
// ZKD_REQUIRE_TOOLS) through internal/needs.
//
// WriteJavaClient writes what a Java ZooKeeper client (zkCli.sh) needs to log in to the realm
// with Krb5LoginModule: a JAAS file with a "Client" section and the JVM flags to use it.
package krbtest
