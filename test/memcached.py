#!/usr/bin/env python3
"""The tests' hands on memcached servers (the protocol's text commands): start and stop servers on
free loopback ports, read their counters and items, and change items behind fltrace's back.

  memcached.py start DIR N [ARGS...]  N servers (memcached -M -l 127.0.0.1 ARGS), each at a free port;
                                      prints host:port,... and keeps their pids in DIR/pids; ARGS
                                      starting with 'evicting': without -M
  memcached.py stop DIR               kill -9 every server started in DIR
  memcached.py restart DIR SERVER     kill -9 that server, start an empty one on its port (ready when
                                      this returns)
  memcached.py items SERVER [PREFIX]  curr_items (or the number of keys starting with PREFIX)
  memcached.py stat SERVER NAME       one counter of "stats" (total_items, curr_items, ...)
  memcached.py sasl-items SERVER USER:PASS  curr_items of a server started with -S (binary
                                      protocol, SASL PLAIN)
  memcached.py keys SERVER PREFIX     the keys starting with PREFIX, one a line
  memcached.py get SERVER KEY         the item's value on stdout (binary), exit 1 if none
  memcached.py alter SERVER KEY       flips one byte in the middle of the item's value
  memcached.py alter-all SERVER PREFIX  the same for every item whose key starts with PREFIX
  memcached.py delete-all SERVER PREFIX
  memcached.py swap SERVER KEY1 KEY2  exchanges two items' values
  memcached.py delete SERVER KEY
  memcached.py set SERVER KEY FILE    stores FILE's bytes as the item
"""
import os, signal, socket, subprocess, sys, time, urllib.parse

def conn(server):
    host, port = server.rsplit(':', 1)
    s = socket.create_connection((host.strip('[]'), int(port)), timeout=10)
    return s, s.makefile('rb')

def stats(server):
    s, f = conn(server)
    s.sendall(b'stats\r\n')
    out = {}
    for line in iter(f.readline, b''):
        if line.startswith(b'END'):
            break
        _, k, v = line.decode().split(None, 2)
        out[k] = v.strip()
    s.close()
    return out

def keys(server, prefix):
    s, f = conn(server)
    for _ in range(100):
        s.sendall(b'lru_crawler metadump all\r\n')
        got, busy = [], False
        for line in iter(f.readline, b''):
            line = line.decode().strip()
            if line == 'END':
                break
            if line.startswith('BUSY'):
                busy = True
                break
            if line.startswith('key='):
                k = urllib.parse.unquote(line.split()[0][4:])
                if k.startswith(prefix):
                    got.append(k)
        if not busy:
            s.close()
            return got
        time.sleep(0.1)
    raise SystemExit('metadump stayed busy')

def get(server, key):
    s, f = conn(server)
    s.sendall(b'get ' + key.encode() + b'\r\n')
    head = f.readline().split()
    if head[0] != b'VALUE':
        return None
    v = f.read(int(head[3]))
    s.close()
    return v

def store(server, key, value):
    s, f = conn(server)
    s.sendall(b'set %s 0 0 %d\r\n' % (key.encode(), len(value)) + value + b'\r\n')
    r = f.readline()
    s.close()
    if not r.startswith(b'STORED'):
        raise SystemExit('set %s: %r' % (key, r))

def sasl_items(server, cred):
    import struct
    host, port = server.rsplit(':', 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    def req(op, key=b'', val=b''):
        s.sendall(struct.pack('>BBHBBHIIQ', 0x80, op, len(key), 0, 0, 0, len(key) + len(val), 0, 0) + key + val)
    def resp():
        h = b''
        while len(h) < 24:
            h += s.recv(24 - len(h))
        _, _, kl, el, _, st, bl, _, _ = struct.unpack('>BBHBBHIIQ', h)
        b = b''
        while len(b) < bl:
            b += s.recv(bl - len(b))
        return st, b[el:el + kl], b[el + kl:]
    user, pw = cred.split(':', 1)
    req(0x21, b'PLAIN', b'\0' + user.encode() + b'\0' + pw.encode())
    if resp()[0] != 0:
        raise SystemExit('authentication refused')
    req(0x10)
    n = None
    while True:
        st, k, v = resp()
        if not k:
            return n
        if k == b'curr_items':
            n = int(v)

def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    p = s.getsockname()[1]
    s.close()
    return p

def launch(port, args):
    """memcached on 127.0.0.1:port (never evicting, unless args start with 'evicting'), once it
    accepts connections; None if it did not start."""
    evict = args[:1] == ['evicting']
    args = args[1:] if evict else args
    p = subprocess.Popen(['memcached'] + ([] if evict else ['-M']) + ['-l', '127.0.0.1', '-p', str(port), '-U', '0', '-t', '2']
                         + (['-u', 'nobody'] if os.getuid() == 0 else []) + args,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    for _ in range(500):
        try:
            socket.create_connection(('127.0.0.1', port), timeout=1).close()
            return p
        except OSError:
            if p.poll() is not None:
                return None
            time.sleep(0.02)
    p.kill()
    return None

def start(d, n, args):
    os.makedirs(d, exist_ok=True)
    out = []
    for _ in range(n):
        for attempt in range(20):
            port = free_port()
            p = launch(port, args)
            if p:
                break
        else:
            raise SystemExit('memcached did not start')
        with open(os.path.join(d, 'pids'), 'a') as f:
            f.write('%d 127.0.0.1:%d %s\n' % (p.pid, port, ' '.join(args)))
        out.append('127.0.0.1:%d' % port)
    print(','.join(out))

def restart(d, server):
    path = os.path.join(d, 'pids')
    lines = open(path).read().split('\n')
    for i, line in enumerate(lines):
        f = line.split()
        if len(f) >= 2 and f[1] == server:
            os.kill(int(f[0]), signal.SIGKILL)
            while os.path.exists('/proc/%s' % f[0]) and open('/proc/%s/stat' % f[0]).read().split()[2] != 'Z':
                time.sleep(0.02)
            p = None
            for _ in range(100): # the port is free once the dead server's socket is gone
                p = launch(int(server.rsplit(':', 1)[1]), f[2:])
                if p:
                    break
                time.sleep(0.05)
            if not p:
                raise SystemExit('memcached did not restart on ' + server)
            lines[i] = '%d %s %s' % (p.pid, server, ' '.join(f[2:]))
            open(path, 'w').write('\n'.join(lines))
            return
    raise SystemExit('no server ' + server + ' in ' + path)

def stop(d):
    try:
        lines = open(os.path.join(d, 'pids')).read().split('\n')
    except OSError:
        return
    for line in lines:
        if line:
            pid = int(line.split()[0])
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
    os.remove(os.path.join(d, 'pids'))

def main(a):
    cmd = a[0]
    if cmd == 'start':
        start(a[1], int(a[2]), a[3:])
    elif cmd == 'stop':
        stop(a[1])
    elif cmd == 'restart':
        restart(a[1], a[2])
    elif cmd == 'items':
        print(len(keys(a[1], a[2])) if len(a) > 2 else stats(a[1])['curr_items'])
    elif cmd == 'sasl-items':
        print(sasl_items(a[1], a[2]))
    elif cmd == 'stat':
        print(stats(a[1])[a[2]])
    elif cmd == 'keys':
        print('\n'.join(keys(a[1], a[2])))
    elif cmd == 'get':
        v = get(a[1], a[2])
        if v is None:
            sys.exit(1)
        sys.stdout.buffer.write(v)
    elif cmd == 'alter':
        v = bytearray(get(a[1], a[2]))
        v[len(v) // 2] ^= 0x55
        store(a[1], a[2], bytes(v))
    elif cmd == 'alter-all':
        for k in keys(a[1], a[2]):
            v = get(a[1], k)
            if v is not None:
                v = bytearray(v)
                v[len(v) // 2] ^= 0x55
                store(a[1], k, bytes(v))
    elif cmd == 'delete-all':
        s, f = conn(a[1])
        for k in keys(a[1], a[2]):
            s.sendall(b'delete ' + k.encode() + b'\r\n')
            f.readline()
    elif cmd == 'swap':
        v1, v2 = get(a[1], a[2]), get(a[1], a[3])
        store(a[1], a[2], v2)
        store(a[1], a[3], v1)
    elif cmd == 'delete':
        s, f = conn(a[1])
        s.sendall(b'delete ' + a[2].encode() + b'\r\n')
        f.readline()
    elif cmd == 'set':
        store(a[1], a[2], open(a[3], 'rb').read())
    else:
        raise SystemExit(__doc__)

main(sys.argv[1:])
