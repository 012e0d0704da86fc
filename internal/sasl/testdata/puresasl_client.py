# Drives pure-sasl's DIGEST-MD5 client as kazoo's _authenticate_with_sasl does, with the
# server's tokens read from stdin and the client's written to stdout, in hex ("-" for
# empty), one a line. Prints "DONE" when complete or "ERR <message>".
import binascii
import sys

from puresasl.client import SASLClient

user, password = sys.argv[1], sys.argv[2]
cli = SASLClient(host='zk-sasl-md5', service='zookeeper', mechanism='DIGEST-MD5',
                 username=user, password=password)
challenge = None
try:
    while not cli.complete:
        response = cli.process(challenge=challenge)
        if cli.complete:
            break
        print(binascii.hexlify(response).decode() if response else '-', flush=True)
        line = sys.stdin.readline().strip()
        if not line:
            print('ERR server closed', flush=True)
            sys.exit(0)
        challenge = b'' if line == '-' else binascii.unhexlify(line)
    print('DONE', flush=True)
except Exception as err:  # noqa: BLE001 - reported to the Go test
    print('ERR %s' % err, flush=True)
