#!/usr/bin/env python3
"""Generator for the blind3 held-out set. Every value is drawn fresh at random.

Templates use {S:kind} for a value that must not reach a model (listed after the
line) and {I:kind} for an incidental random id that is not listed.
"""
import base64, json, re, secrets, string, uuid, random

R = random.SystemRandom()
SEP = " \u2016 "

WORDS = """amber anchor apricot arbor badger bamboo banjo barley basil beacon biscuit blossom
bramble breeze brick bronze bucket butter cabin cactus candle canyon cedar cello chalk cherry
cinder clover cobalt comet copper coral cotton cricket crystal cypress daisy delta dingo dolphin
drizzle ember falcon fennel ferry fiddle fjord flannel garnet ginger glacier goblin granite gravel
harbor hazel heron hickory honey indigo island ivory jasper jigsaw juniper kettle kiwi lagoon
lantern lemon lilac linen lobster maple marble meadow mango mitten molasses moss muffin nectar
nutmeg oatmeal olive onyx orbit orchid otter oyster paddle pebble pepper pickle pine plum pony
poppy pretzel puffin quartz quill radish raven ribbon river rocket saffron sailor sapphire sequoia
shadow sierra silver spruce squirrel sparrow thistle thunder timber tomato tulip turnip velvet
violet walnut willow wombat yarrow zephyr zinnia""".split()
FOREIGN = """schmetterling mariposa papillon farfalla borboleta zitrone limon citron gatto gato
katze chat sonnenblume girasol tournesol himmel cielo ciel arbre baum arbol fenetre ventana
fenster montagne berg montana estrela stella stern""".split()
FIRST = "anna bram chidi dana elif farah goran hana ivo jonas kemi lukas mira nadia omar pia quentin rosa sven tomas uma vera wanjiru xavi yusuf zofia".split()
LAST = "achterberg bianchi castellanos dubois eriksen fonseca gruber halvorsen ibarra jankowski kowalczyk lindqvist mwangi novak okafor petrov quispe rasmussen santoro takahashi ulrich vasquez wojcik yilmaz zamora".split()
PETS = "Biscuit Pickles Noodle Waffles Pepper Mochi Ziggy Tofu Bramble Marmalade".split()
PLACES = "Larkspur Millbrook Oakhaven Ridgefield Stonebridge Thornbury Westmoor Ashcombe Fernvale Kestrel".split()
SCHOOLS = "Primary Academy Elementary Grammar Middle".split()

def hexs(n): return secrets.token_hex((n + 1) // 2)[:n]
def alnum(n, alpha=string.ascii_letters + string.digits): return ''.join(secrets.choice(alpha) for _ in range(n))
def upperdig(n): return alnum(n, string.ascii_uppercase + string.digits)
def lowerdig(n): return alnum(n, string.ascii_lowercase + string.digits)
def b64(nbytes, url=False, pad=True):
    s = (base64.urlsafe_b64encode if url else base64.b64encode)(secrets.token_bytes(nbytes)).decode()
    return s if pad else s.rstrip('=')
def b64u(d): return base64.urlsafe_b64encode(json.dumps(d, separators=(',', ':')).encode()).decode().rstrip('=')
CRYPT = './' + string.digits + string.ascii_uppercase + string.ascii_lowercase
def crypt(n): return alnum(n, CRYPT)
BECH = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

def jwt():
    h = b64u({"alg": R.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"})
    p = b64u({"sub": R.choice(FIRST) + "." + R.choice(LAST), "iat": 1796000000 + R.randint(0, 9999999),
              "exp": 1797000000 + R.randint(0, 9999999), "jti": hexs(16)})
    return f"{h}.{p}.{b64(32, url=True, pad=False)}"

def pw():
    w1, w2 = R.choice(WORDS), R.choice(WORDS + FOREIGN)
    sym = R.choice("!*-_.+#%?$")
    f = R.randint(0, 5)
    if f == 0: return f"{w1.capitalize()}{sym}{w2.capitalize()}{R.randint(10, 99)}"
    if f == 1: return f"{w1}.{w2}.{R.randint(1961, 2019)}"
    if f == 2: return w1.capitalize().replace('o', '0').replace('e', '3') + sym + w2 + str(R.randint(1, 9))
    if f == 3: return f"{R.choice(FOREIGN).capitalize()}{R.randint(100, 999)}{sym}"
    if f == 4: return f"{w1}{R.randint(1000, 9999)}"
    return f"{w1.upper()[:3]}{sym}{w2}{sym}{R.randint(10, 99)}"

def pwu():  # URL-safe human password
    return f"{R.choice(WORDS).capitalize()}{R.choice('-_.~')}{R.choice(WORDS)}{R.randint(10, 999)}"

def phrase(sep=' '):
    return sep.join(R.choice(WORDS) for _ in range(R.randint(4, 5)))

def answer():
    f = R.randint(0, 2)
    if f == 0: return f"{R.choice(PETS)} {R.choice(WORDS).capitalize()}"
    if f == 1: return f"{R.choice(PLACES)} {R.choice(SCHOOLS)}"
    return f"{R.choice(WORDS).capitalize()} {R.choice(PLACES)}"

def user(): return R.choice(FIRST)[0] + R.choice(LAST) + (str(R.randint(1, 99)) if R.random() < .3 else '')
def email():
    dom = R.choice(["corp.example.com", "mail.example.org", "example.net", "staff.example.co.uk", "examplebank.test"])
    return f"{R.choice(FIRST)}.{R.choice(LAST)}{R.randint(1, 99) if R.random() < .4 else ''}@{dom}"
def host():
    return R.choice(["db", "mq", "bk", "vpn", "ci", "mail", "iot", "pay", "sso", "etl"]) + f"-{R.choice(['prd','stg','int','ops'])}-{R.randint(1, 40):02d}." + R.choice(["corp.internal", "int.example.lan", "ops.home.arpa", "dc1.example.local"])

def card_luhn():
    d = [4] + [R.randint(0, 9) for _ in range(14)]
    s = 0
    for i, x in enumerate(reversed(d)):
        if i % 2 == 0: x *= 2; x = x - 9 if x > 9 else x
        s += x
    return ''.join(map(str, d)) + str((10 - s % 10) % 10)

def iban():
    return "DE" + f"{R.randint(10, 99)}" + ''.join(str(R.randint(0, 9)) for _ in range(18))

def ssh_ed():
    blob = b'\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20' + secrets.token_bytes(32)
    return "ssh-ed25519 " + base64.b64encode(blob).decode()

NIX = "0123456789abcdfghijklmnpqrsvwxyz"

K = {  # kind: (category, generator)   m=machine secret, h=human credential, p=personal/internal
 'hex16': ('m', lambda: hexs(16)), 'hex24': ('m', lambda: hexs(24)), 'hex32': ('m', lambda: hexs(32)),
 'hex40': ('m', lambda: hexs(40)), 'hex64': ('m', lambda: hexs(64)),
 'b64_24': ('m', lambda: b64(24)), 'b64_32': ('m', lambda: b64(32)), 'b64_48': ('m', lambda: b64(48)),
 'b64_64': ('m', lambda: b64(64)), 'an12': ('m', lambda: alnum(12)), 'an20': ('m', lambda: alnum(20)),
 'an32': ('m', lambda: alnum(32)), 'an24': ('m', lambda: alnum(24)), 'an40': ('m', lambda: alnum(40)), 'an48': ('m', lambda: alnum(48)),
 'an64': ('m', lambda: alnum(64)), 'ud20': ('m', lambda: upperdig(20)), 'ld16': ('m', lambda: lowerdig(16)), 'an16': ('m', lambda: alnum(16)),
 'ld26': ('m', lambda: lowerdig(26)),
 'uuid': ('m', lambda: str(uuid.uuid4())), 'UUID': ('m', lambda: str(uuid.uuid4()).upper()),
 'jwt': ('m', jwt),
 'bcrypt': ('m', lambda: "$2b$12$" + crypt(53)), 'bcrypty': ('m', lambda: "$2y$10$" + crypt(53)),
 'sha512c': ('m', lambda: "$6$" + crypt(16) + "$" + crypt(86)),
 'sha256c': ('m', lambda: "$5$" + crypt(8) + "$" + crypt(43)),
 'md5c': ('m', lambda: "$1$" + crypt(8) + "$" + crypt(22)),
 'argon2': ('m', lambda: "$argon2id$v=19$m=65536,t=3,p=4$" + b64(16, pad=False) + "$" + b64(32, pad=False)),
 'asapbk': ('m', lambda: "$sha512$5000$" + b64(16) + "$" + b64(16)),
 'mysqlnat': ('m', lambda: "*" + hexs(40).upper()),
 'pgmd5': ('m', lambda: "md5" + hexs(32)),
 'scram': ('m', lambda: f"SCRAM-SHA-256$4096:{b64(16)}${b64(32)}:{b64(32)}"),
 'pem': ('m', lambda: b64(48)),
 'akia': ('m', lambda: "AKIA" + upperdig(16)), 'awssk': ('m', lambda: alnum(40, string.ascii_letters + string.digits + '/+')),
 'ghp': ('m', lambda: "ghp_" + alnum(36)), 'glpat': ('m', lambda: "glpat-" + alnum(20, string.ascii_letters + string.digits + '-_')),
 'xoxb': ('m', lambda: f"xoxb-{R.randint(10**10, 10**11)}-{R.randint(10**12, 10**13)}-{alnum(24)}"),
 'sklive': ('m', lambda: "sk_live_" + alnum(24)), 'sg': ('m', lambda: "SG." + alnum(22, string.ascii_letters + string.digits + '-_') + "." + alnum(43, string.ascii_letters + string.digits + '-_')),
 'hvs': ('m', lambda: "hvs." + alnum(24)), 'npm': ('m', lambda: "npm_" + alnum(36)),
 'aiza': ('m', lambda: "AIza" + alnum(35, string.ascii_letters + string.digits + '-_')),
 'dop': ('m', lambda: "dop_v1_" + hexs(64)), 'hf': ('m', lambda: "hf_" + alnum(34)),
 'tgbot': ('m', lambda: f"{R.randint(10**9, 7*10**9)}:AA{alnum(33, string.ascii_letters + string.digits + '-_')}"),
 'atsk': ('m', lambda: "atsk_" + hexs(64)), 'ptla': ('m', lambda: "ptla_" + alnum(43)), 'ptlc': ('m', lambda: "ptlc_" + alnum(43)),
 'panos': ('m', lambda: "LUFRPT" + b64(57)), 'ts3priv': ('m', lambda: alnum(40, string.ascii_letters + string.digits + '+')),
 'mailcow': ('m', lambda: '-'.join(upperdig(6) for _ in range(5))),
 'agesk': ('m', lambda: "AGE-SECRET-KEY-1" + alnum(58, BECH.upper())),
 'sentry': ('m', lambda: hexs(32)), 'flw': ('m', lambda: f"FLWSECK-{hexs(32)}-X"),
 'xkeysib': ('m', lambda: f"xkeysib-{hexs(64)}-{alnum(16)}"),
 'sess': ('m', lambda: alnum(32, string.ascii_lowercase + string.digits)),
 'zbkey': ('m', lambda: '[' + ', '.join(str(R.randint(0, 255)) for _ in range(16)) + ']'),
 'wgpriv': ('m', lambda: b64(32)),
 'pw': ('h', pw), 'pwu': ('h', pwu), 'phrase': ('h', phrase), 'phrase_dash': ('h', lambda: phrase('-')),
 'pin4': ('h', lambda: f"{R.randint(0, 9999):04d}"), 'pin6': ('h', lambda: f"{R.randint(0, 999999):06d}"),
 'answer': ('h', answer), 'mnem12': ('h', lambda: ' '.join(R.choice(WORDS) for _ in range(12))),
 'word': ('h', lambda: R.choice(WORDS) + str(R.randint(1, 99))),
 'email': ('p', email), 'ip10': ('p', lambda: f"10.{R.randint(0,255)}.{R.randint(0,255)}.{R.randint(2,254)}"),
 'ip172': ('p', lambda: f"172.{R.randint(16,31)}.{R.randint(0,255)}.{R.randint(2,254)}"),
 'ip192': ('p', lambda: f"192.168.{R.randint(0,255)}.{R.randint(2,254)}"),
 'host': ('p', host), 'user': ('p', user),
 'phone': ('p', lambda: f"+2547{R.randint(10,99)}{R.randint(100000,999999)}"),
 'phoneus': ('p', lambda: f"+1 (415) 555-{R.randint(1000,9999)}"),
 'msisdn': ('p', lambda: f"2547{R.randint(10,99)}{R.randint(100000,999999)}"),
 'iban': ('p', iban), 'card': ('p', card_luhn), 'acct': ('p', lambda: str(R.randint(10**9, 10**10))),
 'name': ('p', lambda: f"{R.choice(FIRST).capitalize()} {R.choice(LAST).capitalize()}"),
 # public / incidental
 'rid': ('i', lambda: hexs(16)), 'rid32': ('i', lambda: hexs(32)), 'ruuid': ('i', lambda: str(uuid.uuid4())),
 'sha1': ('v', lambda: hexs(40)), 'sha7': ('v', lambda: hexs(7)), 'sha256': ('v', lambda: hexs(64)),
 'sha512': ('v', lambda: hexs(128)), 'md5': ('v', lambda: hexs(32)),
 'sshfp': ('v', lambda: "SHA256:" + b64(32, pad=False)),
 'md5fp': ('v', lambda: ':'.join(hexs(2) for _ in range(16))),
 'gpgfp': ('v', lambda: ' '.join(hexs(4).upper() for _ in range(5)) + '  ' + ' '.join(hexs(4).upper() for _ in range(5))),
 'gpgfp40': ('v', lambda: hexs(40).upper()), 'gpglong': ('v', lambda: hexs(16).upper()),
 'sshed': ('v', ssh_ed), 'age1': ('v', lambda: "age1" + alnum(58, BECH)),
 'wgpub': ('v', lambda: b64(32)), 'nix': ('v', lambda: alnum(32, NIX)),
 'tp': ('v', lambda: f"00-{hexs(32)}-{hexs(16)}-01"),
 'b64sri': ('v', lambda: b64(48)), 'b64sri512': ('v', lambda: b64(64)), 'b64sri256': ('v', lambda: b64(32)),
}

PAT = re.compile(r"\{([SI]):([A-Za-z0-9_]+)\}")

def expand(t):
    vals, cats = [], []
    def sub(m):
        c, g = K[m.group(2)]
        v = g()
        if m.group(1) == 'S':
            vals.append(v); cats.append(c)
        return v
    line = PAT.sub(sub, t)
    return line, vals, cats

PLANTED = r"""
## proxysql
2026-12-06 09:14:02 [INFO] Received command LOAD MYSQL USERS TO RUNTIME from admin user 'radmin'; admin-admin_credentials="admin:{S:pw};radmin:{S:an20}"
Admin>INSERT INTO mysql_users(username,password,default_hostgroup) VALUES ('app_orders','{S:pw}',10);
Admin>INSERT INTO mysql_users(username,password,default_hostgroup) VALUES ('reporting','{S:mysqlnat}',20);
2026-12-06 09:15:41 MySQL_Monitor.cpp:1402:monitor_ping(): [ERROR] Server {S:host}:3306 is not responding; monitor_username=monitor monitor_password={S:word}
mysql_variables = { monitor_password="{S:pw}" threads=4 }   # /etc/proxysql.cnf line 21
2026-12-06 09:17:03 ProxySQL_Admin.cpp:5910:flush_mysql_variables___database_to_runtime(): [WARNING] mysql-monitor_password changed from 'monitor' to '{S:pwu}'
mysql_servers: ( { address="203.0.113.44" , port=3306 , hostgroup=10, comment="primary db.example.com" } )
mysql-monitor_password={S:an24} mysql-monitor_username=monitor   # proxysql.cnf, provisioned by terraform
2026-12-06 09:20:01 ProxySQL_Cluster.cpp:412:set_checksums(): [INFO] Cluster: peer admin credentials cluster_username=cluster cluster_password={S:hex32}
Admin>UPDATE global_variables SET variable_value='stats:{S:pw}' WHERE variable_name='admin-stats_credentials';

## vitess
I1206 10:02:11.491823   4412 vtgate.go:211] mysql_auth_server_static_string={"app":[{"Password":"{S:pw}","UserData":"app"}]}
vtctldclient --server ci.example.com:15999 ApplySchema --sql-file /home/{S:user}/migrations/0042_orders.sql commerce
E1206 10:04:55.019344   4412 tablet.go:88] tablet connection failed: dial tcp 198.51.100.141:15991: connection refused (db_app_password={S:an32})
vttablet -db_dba_user vt_dba -db_dba_password '{S:pw}' -db_app_user vt_app -tablet-path zone1-0000000101
{"mysql_static_auth":{"admin":[{"MysqlNativePassword":"{S:mysqlnat}","UserData":"admin"}]}}
W1206 10:06:17.002341   4412 grpc_auth_static.go:64] static auth file /etc/vitess/grpc_auth.json entry {"Username":"vtctld","Password":"{S:an40}"}
vtexplain --vschema-file vschema.json --schema-file schema.sql --sql "SELECT * FROM customer WHERE email='{S:email}'"
vtadmin --http-tablet-url-tmpl "https://{{ .Tablet.Hostname }}:15100" --rbac-config rbac.yaml  # dev api token {S:hex40}
I1206 10:09:12.000211   4412 vtorc.go:91] MySQLTopologyPassword={S:pw} MySQLTopologyUser=orc_client

## yugabytedb
ysqlsh "host=node1.example.org port=5433 user=yugabyte password={S:pw} dbname=yugabyte sslmode=require"
I1206 11:20:01.004421  9981 pg_wrapper.cc:312] ysql_hba_conf_csv: host all all {S:ip10}/32 md5
yugabyted start --advertise_address=203.0.113.147 --base_dir=/home/{S:user}/yb-data --secure --certs_dir=/tmp/certs
postgres=# ALTER ROLE etl_writer WITH PASSWORD '{S:pw}';
2026-12-06 11:22:10.338 UTC [4121] LOG:  ysql role "etl_reader" rolpassword={S:scram}
ycqlsh localhost 9042 -u cassandra -p '{S:word}' -e "DESCRIBE KEYSPACES"
yb-admin --master_addresses 203.0.113.136:7100 --certs_dir_name /opt/yb/certs set_preferred_zones aws.eu-west-1.eu-west-1a
yb-tserver --ysql_enable_auth --ysql_hba_conf_csv='local all yugabyte trust' --ysql_pg_conf_csv=password_encryption=scram-sha-256 # initial pw {S:an32}
YSQL_PASSWORD={S:b64_24} ysqlsh -h db.example.com -U admin -c '\l'
postgres=# CREATE USER reader WITH ENCRYPTED PASSWORD '{S:scram}';

## questdb
2026-12-06T08:01:22.118430Z I i.q.c.h.HttpServer listening on 0.0.0.0:9000 [fd=41, http.user=admin, http.password={S:an32}]
pg.user=admin
pg.password={S:an20}
QDB_PG_READONLY_PASSWORD={S:pwu} QDB_PG_READONLY_USER=grafana
curl -G --data-urlencode "query=SELECT count() FROM trades" -u "admin:{S:pwu}" http://mq.example.com:9000/exec
2026-12-06T08:03:51.009211Z E i.q.c.l.t.LineTcpAuthConnectionContext authentication failed [kid=ingest, d={S:b64_32}]
ilp.auth.token={S:jwt}
http.ro.password={S:pw}
[{"kid":"ingest","kty":"EC","crv":"P-256","d":"{S:b64_32}","x":"{I:rid32}"}]
QDB_HTTP_PASSWORD={S:an32} docker compose up -d questdb

## concourse
fly -t ci login -c https://ci.example.com -u admin -p '{S:pw}'
{"timestamp":"2026-12-06T07:44:10.118304Z","level":"info","source":"atc","message":"atc.credential-manager.vault","data":{"auth_backend":"approle","secret_id":"{S:uuid}"}}
CONCOURSE_ADD_LOCAL_USER=admin:{S:pw},viewer:{S:pwu}
  params: { DEPLOY_KEY: "{S:b64_48}", REGISTRY_PASSWORD: "{S:pw}" }
fly -t ci set-pipeline -p release -c pipeline.yml -v github-token={S:ghp} -v slack-webhook-token={S:an32}
CONCOURSE_POSTGRES_PASSWORD={S:an32} CONCOURSE_POSTGRES_HOST={S:host}
{"timestamp":"2026-12-06T07:46:02.210111Z","level":"error","source":"worker","message":"worker.beacon.restarting","data":{"tsa-host":"{S:ip10}:2222","worker-key":"/home/{S:user}/.concourse/worker_key"}}
      password: ((docker.password)) # resolved from {S:awssk} at build 1184
CONCOURSE_SESSION_SIGNING_KEY={S:b64_48}

## spinnaker
hal config provider docker-registry account add dockerhub --address index.docker.io --username deploybot --password-command "echo {S:an20}"
2026-12-06 12:10:01.118 INFO 1 --- [           main] c.n.s.clouddriver.aws.AwsConfiguration : account prod-aws accessKeyId={S:akia} secretKey={S:awssk}
hal config artifact github account add gh-artifacts --token {S:ghp}
spring.datasource.password: {S:an32}   # front50.yml on {S:host}
2026-12-06 12:12:44.502 WARN 1 --- [ool-12-thread-3] c.n.s.gate.security.basic.BasicAuthConfig : basic auth user=gate-admin password={S:pw}
hal config ci jenkins master add jenkins-prod --address https://ci.example.com --username ci-bot --password {S:an32}
notifications.slack.token: {S:xoxb}
hal config provider kubernetes account add prod --service-account-token {S:jwt}
2026-12-06 12:15:00.118 INFO 1 --- [           main] c.n.s.fiat.config.FiatServerConfig : github.accessToken={S:ghp}

## cisco-asa
username admin password {S:asapbk} pbkdf2 privilege 15
enable password {S:asapbk} pbkdf2
 tunnel-group 198.51.100.78 ipsec-attributes
  ikev1 pre-shared-key {S:an24}
 ikev2 remote-authentication pre-shared-key {S:an20}
aaa-server RADIUS (inside) host 127.0.0.1
 key {S:pw}
Dec 06 2026 13:02:11: %ASA-6-113004: AAA user authentication Successful : server = {S:ip10} : user = {S:user}
snmp-server host inside 192.0.2.111 community {S:word} version 2c
Dec 06 2026 13:05:40: %ASA-6-605005: Login permitted from {S:ip192}/51442 to inside:127.0.0.1/ssh for user "{S:user}"

## pan-os
set mgt-config users admin phash {S:md5c}
admin@PA-3220> request license api-key set key {S:an40}
<response status="success"><result><key>{S:panos}</key></result></response>
curl -k "https://broker.example.net/api/?type=keygen&user=apiuser&password={S:pwu}"
set network ike gateway gw-branch42 authentication pre-shared-key key {S:pw}
2026-12-06 14:11:02.338 +0000 SYSTEM auth auth-success 0 User '{S:user}' authenticated. From: 192.0.2.176.
set deviceconfig system ntp-servers primary-ntp-server authentication-type symmetric-key key-id 1 algorithm sha1 authentication-key {S:hex40}
set shared server-profile ldap corp-ldap bind-dn "cn=pan-bind,ou=svc,dc=corp,dc=internal" bind-password {S:pw}

## sophos-firewall
2026-12-06 15:00:12 device="SFW" log_type="Event" log_component="Firewall Authentication" status="Successful" user_name="{S:email}" src_ip="{S:ip10}"
console> system ha peer-administration-password {S:an20}
<Password>{S:pw}</Password><AuthenticationType>Local</AuthenticationType>
<PresharedKey>{S:b64_24}</PresharedKey>
https://broker.example.net:4444/webconsole/APIController?reqxml=<Request><Login><Username>apiadmin</Username><Password>{S:pwu}</Password></Login></Request>
2026-12-06 15:02:45 csc: [INFO] backup job encrypted with passphrase "{S:phrase}"
{"event":"SSL VPN login","user":"deploy","assigned_ip":"192.0.2.159","otp_seed":"{S:ud20}"}
2026-12-06 15:05:10 awarrenhttp: [WARN] API token {S:hex64} used from 198.51.100.7
system diagnostics show version-info   # support access token: {S:ud20}

## apache-pulsar
2026-12-06T16:01:02,118+0000 [main] INFO  org.apache.pulsar.broker.PulsarService - brokerClientAuthenticationParameters=token:{S:jwt}
tokenSecretKey=data:;base64,{S:b64_32}
bin/pulsar-admin --admin-url https://node1.example.org:8443 --auth-plugin org.apache.pulsar.client.impl.auth.AuthenticationToken --auth-params token:{S:jwt} tenants list
bin/pulsar tokens create --secret-key file:///home/{S:user}/keys/secret.key --subject pipeline-svc
2026-12-06T16:03:44,902+0000 [pulsar-io-4-3] WARN  org.apache.pulsar.broker.service.ServerCnx - [/{S:ip10}:55122] Unable to authenticate: token {S:jwt} expired
brokerClientAuthenticationParameters={"userId":"superuser","password":"{S:an20}"}
bookkeeperClientAuthenticationParameters=username=bk;password={S:an32}
brokerClientTlsKeyStorePassword={S:pw}
superUserRoles=admin,proxy ; proxy token {S:jwt}

## activemq
2026-12-06 17:10:01,003 | INFO  | Apache ActiveMQ 5.18.3 (localhost, ID:{I:rid}) started | org.apache.activemq.broker.BrokerService | main
activemq.username=system
activemq.password={S:pw}
admin={S:pw},admin
<simpleAuthenticationUser username="orders-svc" password="{S:pw}" groups="users"/>
<bean id="jmsConnectionFactory" class="org.apache.activemq.ActiveMQConnectionFactory"><property name="brokerURL" value="failover:(ssl://{S:host}:61617)"/><property name="password" value="{S:an20}"/></bean>
2026-12-06 17:14:22,551 | WARN  | Security error occurred on connection to: tcp://{S:ip10}:50122, User name [svc-etl] or password is invalid. | org.apache.activemq.broker.TransportConnection.Service
ENC key for credentials-enc.properties: ACTIVEMQ_ENCRYPTION_PASSWORD={S:phrase_dash}
activemq.jmx.password={S:an20}
2026-12-06 17:15:02,118 | INFO  | Connector amqp+ssl started; keyStorePassword={S:pw}, trustStorePassword={S:an24} | org.apache.activemq.broker.TransportConnector | main
admin: {S:pw}, admin   # jetty-realm.properties
curl -u admin:{S:pwu} 'http://localhost:8161/api/jolokia/read/org.apache.activemq:type=Broker,brokerName=localhost'

## hivemq
<user><name>sensor-gw</name><password>{S:pw}</password><roles><id>publisher</id></roles></user>
<password encoding="BASE64">{S:b64_32}</password>
2026-12-06 18:00:12,441 INFO  - Client ID: fleet-{I:rid}, IP: 192.0.2.190, Clean Start: true, Session Expiry: 0 connected, username={S:user}
<keystore><path>/opt/hivemq/conf/hivemq.jks</path><password>{S:pw}</password><private-key-password>{S:pw}</private-key-password></keystore>
java -jar hivemq-cli.jar pub -h {S:host} -p 8883 -u device-77 -pw {S:word} -t fleet/telemetry -m "{\"v\":1}"
hivemq.control-center.user.password={S:hex64}
2026-12-06 18:05:31,001 WARN  - Client with ID bad-probe sent CONNECT with invalid credentials (password {S:an12})
<enterprise-extension-license>{S:b64_64}</enterprise-extension-license>
2026-12-06 18:07:11,002 INFO  - OAuth JWT accepted for client plc-12, token={S:jwt}

## vernemq
vmq-passwd /etc/vernemq/vmq.passwd gateway-{I:rid}
gateway-01:{S:sha512c}
2026-12-06 19:00:01.118 [info] <0.1894.0>@vmq_diversity_plugin:auth_on_register:201 username=<<"{S:user}">> password=<<"{S:pw}">>
plugins.vmq_diversity.postgres.password = {S:an32}
plugins.vmq_diversity.auth_postgres.enabled = on ; plugins.vmq_diversity.postgres.host = db.example.com
vmq-admin webhooks register hook=auth_on_register endpoint="https://hooks:{S:pwu}@ci.example.com/vmq/auth"
2026-12-06 19:03:14.771 [warning] <0.2201.0>@vmq_mqtt_fsm:check_user:611 can't authenticate client {"",<<"lamp-{I:rid}">>} from {S:ip192}:49233 due to invalid_credentials
vmq-admin api-key add key={S:an32}
vmq-admin cluster join discovery-node=VerneMQ@mq.example.com cookie={S:an40}
distributed_cookie = {S:an32}
listener.ssl.keyfile_password = {S:pw}
plugins.vmq_webhooks.auth_on_register.endpoint = https://webhook:{S:an24}@auth.example.com/hook

## duplicati
duplicati-cli backup "s3://backups-{I:rid}/laptop?auth-username={S:akia}&auth-password={S:awssk}" /home/{S:user}/Documents --passphrase="{S:phrase}"
2026-12-06 20:00:01 +00 - [Information-Duplicati.Library.Main.Controller-StartingOperation]: The operation Backup has started, source C:\Users\{S:user}\Pictures
duplicati-server --webservice-password={S:b64_24} --webservice-port=8200
--passphrase={S:pw} --dblock-size=50mb --keep-versions=12
"Options": {"passphrase":"{S:phrase}","encryption-module":"aes","ssh-fingerprint":"ssh-rsa 2048 {I:rid}"}
duplicati-cli restore "ssh://node1.example.org/srv/bk?auth-username=bk&auth-password={S:pwu}" --restore-path=/home/{S:user}/restore
sftp://backup:{S:pwu}@203.0.113.94:22/volume1/dup
duplicati-cli backup "googledrive://Backups/pc?authid={S:an40}" /srv/share --passphrase={S:an32}
--send-mail-password={S:pw} --send-mail-to=it-alerts

## bacula
Director { Name = bk-dir; Password = "{S:b64_32}"; Address = mq.example.com }
Client { Name = web01-fd; Address = 198.51.100.96; FDPort = 9102; Catalog = MyCatalog; Password = "{S:pw}" }
Storage { Name = File1; Address = localhost; Password = "{S:an40}"; Device = FileChgr1 }
Catalog { Name = MyCatalog; dbname = "bacula"; dbuser = "bacula"; dbpassword = "{S:pw}" }
06-Dec 21:00 bk-dir JobId 4412: Fatal error: Authorization key rejected by Storage daemon. Password = "{S:an32}"
  PKI Master Key = "/etc/bacula/master.cert"; PKI Keypair = "/home/{S:user}/bacula/fd.pem"
Console { Name = operator; Password = "{S:phrase}"; CommandACL = status, .status }
Messages { mailcommand = "/usr/sbin/bsmtp -h smtp.example.com -f bacula"; } # smtp auth {S:pw}
PKI Cipher = aes256; PKI Key passphrase = "{S:phrase}"

## veeam
Add-VBRCredentials -User "CORP\{S:user}" -Password '{S:an24}' -Description "hyperv hosts"
[06.12.2026 22:00:11] <01> Info     [ViCredentials] Connecting to broker.example.net as vsphere.local\svc-veeam with password '{S:b64_24}'
Connect-VBRServer -Server broker.example.net -User administrator -Password "{S:pw}"
[06.12.2026 22:03:41] <12> Info     Encryption key 'weekly-offsite' created, password: {S:b64_24}
Add-VBRLinuxRepository -Name "hardened" -Server 127.0.0.1 -SSHUser veeamrepo -SSHPassword "{S:pw}"
Set-VBRJobAdvancedStorageOptions -EnableEncryption:$true -EncryptionKey (Add-VBREncryptionKey -Password (ConvertTo-SecureString "{S:phrase}" -AsPlainText -Force))
[06.12.2026 22:05:02] <33> Error    Failed to logon to 192.0.2.86 ({S:email}): The user name or password is incorrect.
[06.12.2026 22:07:44] <41> Info     [CloudGateway] Tenant key {S:hex64} accepted
New-VBRCloudTenant -Name acme -Password (ConvertTo-SecureString '{S:pw}' -AsPlainText -Force)

## velero
velero install --provider aws --bucket velero-prod --secret-file /home/{S:user}/credentials-velero --backup-location-config region=minio,s3Url=http://mq.example.com:9000
aws_access_key_id = {S:akia}
aws_secret_access_key = {S:awssk}
time="2026-12-06T23:00:14Z" level=info msg="Backup completed" backup=velero/nightly-{I:rid} logSource="pkg/backup/backup.go:449"; restic repo password {S:an40}
  AZURE_STORAGE_ACCOUNT_ACCESS_KEY={S:b64_64}
velero plugin add velero/velero-plugin-for-gcp:v1.9.0 --credentials-file /Users/{S:user}/Downloads/sa-key.json
kubectl -n velero create secret generic cloud-credentials --from-literal=cloud="[default]\naws_access_key_id={S:akia}\naws_secret_access_key={S:awssk}"
  BSL_PASSWORD: {S:b64_32}
velero repo-maintenance: kopia repository password={S:an32}

## node-red
    credentialSecret: "{S:pw}",
    adminAuth: { type: "credentials", users: [{ username: "admin", password: "{S:bcrypt}", permissions: "*" }] },
6 Dec 07:12:44 - [info] Settings file  : /home/{S:user}/.node-red/settings.js
6 Dec 07:12:45 - [warn] [mqtt-broker:home] Connection failed to broker: mqtt://iot:{S:pwu}@198.51.100.157:1883
{"id":"{I:rid}","type":"http request","method":"GET","url":"https://api.example.com/v2?apikey={S:hex32}"}
    httpNodeAuth: {user:"flows",pass:"{S:bcrypt}"},
6 Dec 07:15:10 - [info] [telegram bot:alerts] token {S:tgbot} registered
$ node-red admin hash-pw
Password: {S:an32}
{S:bcrypt}

## zigbee2mqtt
  network_key: {S:zbkey}
  password: '{S:pw}'
  user: z2m
  server: mqtt://198.51.100.30:1883
[2026-12-06 08:00:12] info: 	zh:controller: Network key: {S:zbkey}
[2026-12-06 08:00:13] error: 	z2m: MQTT error: Connection refused: Not authorized (user z2m, password {S:an24})
  auth_token: {S:an32}
  ext_pan_id: {I:rid}
[2026-12-06 08:01:02] debug: 	z2m: Received Zigbee message, install_code={S:hex32}, link_key={S:hex32}
  frontend: { port: 8080, auth_token: '{S:an32}' }
[2026-12-06 08:02:44] info: 	z2m: MQTT publish: topic 'zigbee2mqtt/bridge/response/backup', payload '{"data":{"zip":"{S:b64_48}"}}'
  ota: { zigbee_ota_override_index_location: 'https://ota:{S:pwu}@ota.example.com/index.json' }

## chirpstack
api.secret="{S:b64_32}"
dsn="postgres://chirpstack:{S:pwu}@mq.example.com/chirpstack?sslmode=disable"
2026-12-06T09:10:01.118Z  INFO chirpstack::api::device: Device activated dev_eui=0004a30b001c{I:rid} app_key={S:hex32}
chirpstack-cli --server mq.example.com:8080 --api-key {S:jwt} device list
{"devEui":"70b3d57ed005a1f2","keys":{"nwkKey":"{S:hex32}","appKey":"{S:hex32}"}}
2026-12-06T09:12:55.004Z  WARN chirpstack::integration::mqtt: connect failed, username=gw-bridge password={S:pw}
[integration.mqtt] server="tcp://127.0.0.1:1883/" username="chirpstack" password="{S:an20}"
[gateway.backend.mqtt] client_cert="/etc/certs/gw.crt" client_key_password="{S:pw}"
{"devEui":"70b3d57ed005a1f3","keys":{"appSKey":"{S:hex32}","nwkSEncKey":"{S:hex32}"}}

## valheim
./valheim_server.x86_64 -name "Bramble Co-op" -port 2456 -world "Dedicated" -password "{S:an32}" -public 0
12/06/2026 20:01:11: Got handshake from client 76561198{I:rid}, password={S:word}
SERVER_PASS={S:pw} SERVER_NAME=Longhouse WORLD_NAME=Fjordheim
12/06/2026 20:02:31: Peer 76561198044 has wrong password '{S:b64_24}'
docker run -d -e SERVER_PASS="{S:pwu}" -e SERVER_PUBLIC=false -v /home/{S:user}/valheim:/config lloesche/valheim-server
adminlist.txt uploaded by {S:email}
12/06/2026 20:05:02: Valheim server password changed to: {S:pw}
Steam GSLT: {S:hex32}
BACKUPS_RCLONE_PASSWORD={S:b64_32}

## pterodactyl
[2026-12-06 10:00:01] production.INFO: API key created {"identifier":"ptla_{I:rid}","key":"{S:ptla}"}
Authorization: Bearer {S:ptlc}
APP_KEY=base64:{S:b64_32}
DB_PASSWORD={S:pw}
MAIL_PASSWORD={S:an20} MAIL_USERNAME={S:email}
[2026-12-06 10:02:14] production.ERROR: SQLSTATE[HY000] [1045] Access denied for user 'pterodactyl'@'192.0.2.203' (using password: YES) {"pw":"{S:pw}"}
{"level":"info","time":"2026-12-06T10:03:11Z","msg":"configured wings","token_id":"{I:rid}","token":"{S:an64}","remote":"https://node1.example.org"}
php artisan p:user:make --email={S:email} --username=svc-etl --name-first=Ops --name-last=Admin --password={S:pw} --admin=1

## teamspeak
2026-12-06 21:00:01.118012|INFO    |ServerLibPriv |   |Server Query Admin Account created
         loginname= "serveradmin", password= "{S:an12}"
2026-12-06 21:00:01.120331|WARNING |VirtualServer |1  |--------------------------------------------------------
         token={S:ts3priv}
login serveradmin {S:an12}
ts3server_startscript.sh start serveradmin_password={S:pw} dbplugin=ts3db_mariadb dbpluginparameter=ts3db_mariadb.ini
password={S:pw}   ; ts3db_mariadb.ini [config] host={S:host} username=teamspeak
ts3server://db.example.com?port=9987&password={S:pwu}
2026-12-06 21:04:40.553011|INFO    |VirtualServer |1  |client connected 'Goblin'(id:12) from 192.0.2.31:54012
apikeyadd scope=manage lifetime=0 -> apikey={S:an64}
serverquery> login client_login_name=ops client_login_password={S:an12}
2026-12-06 21:06:11.004312|INFO    |VirtualServer |1  |privilege key used by client 'Otter' token={S:ts3priv}

## rspamd
$ rspamadm pw
Enter passphrase: {S:pw}
{S:bcrypt}
password = "{S:bcrypt}";  # worker-controller.inc
enable_password = "{S:pw}";
2026-12-06 22:10:01 #4121(controller) <{I:rid}>; csession; rspamd_controller_check_password: incorrect password: {S:pw}
  servers = "{S:host}:6379"; password = "{S:an32}";   # redis.conf override
2026-12-06 22:11:44 #4123(normal) <{I:rid}>; task; rspamd_task_write_log: id: <{I:rid}@node1.example.org>, ip: 198.51.100.194, from: <{S:email}>, (default: F (no action): [-0.10/15.00])
dkim_signing { path = "/var/lib/rspamd/dkim/$domain.key"; } # key {S:pem}
fuzzy_check { rule "local" { encryption_key = "{S:b64_32}"; } }

## haraka
[users]
{S:user}={S:pw}
[core] auth_smtp: username={S:email} password={S:pw}
[INFO] [-] [core] Haraka/3.0.3 starting up; auth_proxy host=ci.example.com user=relay pass={S:pw}
[PROTOCOL] [{I:ruuid}] [core] C: AUTH PLAIN {S:b64_24}
[NOTICE] [{I:ruuid}] [auth/flat_file] AUTH user="{S:email}" success=true method=CRAM-MD5 from=198.51.100.234
dkim_sign.ini: private_key = {S:pem}
[INFO] [-] [outbound] Delivered to {S:email} via 198.51.100.150:25
[INFO] [-] [outbound] AUTH PLAIN for smarthost user=relay@example.net pass={S:an24}
spamassassin.ini: spamd_password={S:pw}

## mailcow
API_KEY={S:mailcow}
DBPASS={S:an20}
DBROOT={S:an20}
REDISPASS={S:an32}
curl -X POST https://node1.example.org/api/v1/add/mailbox -H "X-API-Key: {S:mailcow}" -d '{"local_part":"finance","domain":"example.org","password":"{S:pw}","password2":"{S:pw}"}'
Dec  6 06:01:11 mail dovecot: imap-login: Login: user=<{S:email}>, method=PLAIN, rip=198.51.100.173, lip={S:ip172}, mpid=4121, TLS
doveadm pw -s SSHA256 -p '{S:pw}'
SOGO_URL_ENCRYPTION_KEY={S:an16}
MAILCOW_PASS_SCHEME=BLF-CRYPT; generated admin hash {S:bcrypty}

## africastalking
AT_API_KEY={S:atsk}
2026-12-06 11:00:02,118 INFO sms.sender: POST https://api.africastalking.com/version1/messaging username=sandbox to={S:phone} apiKey={S:atsk}
{"SMSMessageData":{"Message":"Sent to 1/1","Recipients":[{"number":"{S:phone}","status":"Success","messageId":"ATXid_{I:rid32}"}]}}
africastalking.initialize(username="acme-prod", api_key="{S:atsk}")
2026-12-06 11:03:44,902 INFO ussd: session {S:sess} phone={S:phone} text="1*{S:pin4}"
curl -X POST https://api.africastalking.com/version1/airtime/send -H "apiKey: {S:atsk}" -d '{"recipients":[{"phoneNumber":"{S:phone}","amount":"KES 50"}]}'
Your verification code is {S:pin6}. Do not share it. (queued to {S:phone})
AT_SANDBOX_KEY={S:atsk}
2026-12-06 11:05:12,201 DEBUG payments: mobileCheckout productName=Shop providerChannel=525900 apiKey={S:atsk}

## sinch
SINCH_SERVICE_PLAN_ID={I:rid32}
SINCH_API_TOKEN={S:hex32}
curl -X POST "https://us.sms.api.sinch.com/xms/v1/{I:rid32}/batches" -H "Authorization: Bearer {S:hex32}" -d '{"from":"{S:phoneus}","to":["{S:phoneus}"],"body":"Your code: {S:pin6}"}'
2026-12-06T12:00:01.118Z sinch-voice INFO callback signed with application secret {S:b64_24}
sinch.verification.key={I:ruuid} sinch.verification.secret={S:b64_24}
{"type":"mo_text","from":"{S:phoneus}","to":"12345","body":"STOP","received_at":"2026-12-06T12:01:02Z"}
keyId={I:ruuid} keySecret={S:an32} projectId={I:ruuid}
SINCH_APP_SECRET={S:b64_24}
Authorization: Application {I:ruuid}:{S:b64_24}
2026-12-06T12:03:14.009Z sinch-verify INFO SMS PIN verification for {S:phoneus} code={S:pin4} status=SUCCESSFUL

## clicksend
CLICKSEND_USERNAME={S:email}
CLICKSEND_API_KEY={S:UUID}
curl https://rest.clicksend.com/v3/sms/send -u {S:email}:{S:UUID} -H "Content-Type: application/json" -d @msg.json
configuration.password = '{S:UUID}'  # clicksend_client
{"http_code":200,"response_code":"SUCCESS","data":{"messages":[{"to":"{S:phoneus}","body":"Door code {S:pin4} is active until Friday"}]}}
2026-12-06 13:02:10 WARN ClickSendNotifier: 401 AUTH_FAILED for {S:email} (api key {S:UUID})
curl https://rest.clicksend.com/v3/account -H "Authorization: Basic {S:b64_48}"
CLICKSEND_SUBACCOUNT_PASSWORD='{S:pw}'
2026-12-06 13:05:00 INFO voice call to {S:phoneus}: "Your one-time passcode is {S:pin6}"

## mpesa-daraja
MPESA_CONSUMER_KEY={S:an48}
MPESA_CONSUMER_SECRET={S:an64}
MPESA_PASSKEY={S:hex64}
2026-12-06 14:00:01 INFO daraja: oauth ok access_token={S:an32} expires_in=3599
{"BusinessShortCode":"174379","Password":"{S:b64_64}","Timestamp":"20261206140011","TransactionType":"CustomerPayBillOnline","Amount":"1","PartyA":"{S:msisdn}","PhoneNumber":"{S:msisdn}","AccountReference":"INV-{I:rid}"}
{"Body":{"stkCallback":{"CheckoutRequestID":"ws_CO_{I:rid}","ResultCode":0,"CallbackMetadata":{"Item":[{"Name":"MpesaReceiptNumber","Value":"{I:rid}"},{"Name":"PhoneNumber","Value":{S:msisdn}}]}}}}
B2C SecurityCredential={S:b64_64} InitiatorName=apiop InitiatorPassword={S:pw}
2026-12-06 14:03:12 WARN daraja: M-PESA PIN entered for {S:msisdn} was {S:pin4}, transaction reversed

## freeipa
ipa-server-install -r CORP.INTERNAL -n corp.internal -p '{S:pw}' -a '{S:pw}' --hostname=localhost --setup-dns -U
$ kinit admin
Password for admin@CORP.INTERNAL: {S:pw}
ipa user-add svc-backup --first=Mira --last=Santoro --email={S:email} --password <<< '{S:pw}'
ipa-replica-install --principal admin --admin-password '{S:an20}' --server mq.example.com
[06/Dec/2026:15:00:12.118841 +0000] conn=4121 op=1 BIND dn="uid={S:user},cn=users,cn=accounts,dc=corp,dc=internal" method=128 version=3 from {S:ip10}
ipa otptoken-add --type=totp --owner=ops-bot --key={S:ud20}
Directory Manager password: {S:pw}
ipa-getkeytab -s ipa.example.com -p HTTP/web.example.com -k /etc/http.keytab -P   # New Principal Password: {S:pw}
ipa vault-archive backup-keys --in /root/keys.tar --password '{S:phrase}'

## gluu
ldapPass={S:pw}
oxauth_openid_key_pass={S:an32}
2026-12-06 16:00:01,118 INFO  [qtp-12] [org.gluu.oxauth.auth.Authenticator] Authenticating user '{S:user}' with password '{S:pw}'
{"client_id":"{I:ruuid}","client_secret":"{S:an32}","redirect_uris":["https://ci.example.com/callback"]}
inum={I:ruuid}, oxAuthClientSecret={S:b64_24}
python3 setup.py -n -ip={S:ip10} -host={S:host} -admin_pw='{S:pw}' -org=Example -email={S:email}
2026-12-06 16:02:44,551 DEBUG [org.gluu.oxauth.service.SessionIdService] session_id={S:uuid} user=operator state=authenticated
oxTrustConfCacheRefresh keystorePassword={S:an20}
{"access_token":"{S:uuid}","token_type":"Bearer","expires_in":299,"id_token":"{S:jwt}"}

## debezium
{"name":"inventory-connector","config":{"connector.class":"io.debezium.connector.mysql.MySqlConnector","database.hostname":"node1.example.org","database.user":"debezium","database.password":"{S:pw}"}}
"database.password": "{S:pw}",
2026-12-06 17:00:01,118 INFO   ||  MySqlConnectorConfig values: database.hostname = 203.0.113.30 database.password = {S:pw} database.user = cdc_reader   [io.debezium.connector.common.BaseSourceTask]
debezium.source.database.password={S:an20}
debezium.sink.pubsub.credentials={S:b64_64}
2026-12-06 17:02:14,009 ERROR  ||  WorkerSourceTask{id=pg-cdc-0} Connection to {S:host}:5432 refused: FATAL: password authentication failed for user "svc-backup"   [org.apache.kafka.connect.runtime.WorkerTask]
"database.dbname":"payroll","table.include.list":"public.employees","column.mask.with.12.chars":"public.employees.ssn","database.sslpassword":"{S:an32}"
"database.history.producer.sasl.jaas.config":"org.apache.kafka.common.security.plain.PlainLoginModule required username=\"cdc\" password=\"{S:an32}\";"
debezium.sink.redis.password={S:pw}

## luigi
[postgres]
password={S:pw}
[smtp]
password={S:an20}
username={S:email}
INFO: [pid 4121] Worker Worker(salt=918272611, workers=1, host=mq.example.com, username={S:user}, pid=4121) running   LoadOrders(date=2026-12-06)
DEBUG: Checking if CopyToRedshift(aws_secret_access_key={S:awssk}, aws_access_key_id={S:akia}) is complete
luigi --module etl ExportCustomers --db-password '{S:pw}' --local-scheduler
[redshift]
aws_access_key_id={S:akia}
aws_secret_access_key={S:awssk}
INFO: [pid 4133] Worker ran ExportCustomers(db_password=***, api_token={S:hex40})

## meltano
meltano config tap-github set auth_token {S:ghp}
TAP_POSTGRES_PASSWORD={S:pw}
TARGET_SNOWFLAKE_PASSWORD='{S:an24}'
2026-12-06T18:00:01.118843Z [info     ] Environment 'prod' is active; TAP_STRIPE_API_KEY={S:sklive}
    config: { host: db.example.com, user: loader, password: {S:b64_24}, database: raw }
meltano invoke tap-gitlab --config '{"private_token":"{S:glpat}","projects":"data/warehouse"}'
2026-12-06T18:02:44.002112Z [error    ] Extractor failed cmd_type=extractor name=tap-mysql run_id={I:ruuid} stdout="Access denied for user 'etl'@'203.0.113.160'"
TAP_SALESFORCE_CLIENT_SECRET={S:hex64} TAP_SALESFORCE_REFRESH_TOKEN={S:b64_64}
meltano config target-bigquery set credentials_json '{"type":"service_account","private_key_id":"{S:hex40}"}'
2026-12-06T18:04:01.200331Z [debug    ] tap-slack config token={S:xoxb}

## kestra
KESTRA_CONFIGURATION: "kestra: { server: { basic-auth: { enabled: true, username: {S:email}, password: {S:b64_24} } } }"
SECRET_GITHUB_TOKEN={S:b64_48}
2026-12-06 19:00:01,118 INFO  worker-1 c.s.flow.{I:rid} Executing query on jdbc:postgresql://mq.example.com:5432/dw?user=etl&password={S:pwu}
      password: "{S:b64_24}"    # io.kestra.plugin.jdbc.postgresql.Query
curl -u "{S:email}:{S:an32}" -X POST http://ci.example.com:8080/api/v1/executions/prod/nightly
kestra.encryption.secret-key: {S:b64_32}
2026-12-06 19:03:10,551 WARN  webserver Unauthorized login attempt for {S:email} from {S:ip10}
- id: notify type: io.kestra.plugin.notifications.slack.SlackIncomingWebhook url: https://hooks.slack.com/services/T0{I:ud20}/B0{I:ud20}/{S:an24}
SECRET_AWS_SECRET_KEY={S:b64_32}

## freeswitch
<user id="1001"><params><param name="password" value="{S:word}"/><param name="vm-password" value="{S:pin4}"/></params></user>
<X-PRE-PROCESS cmd="set" data="default_password={S:an24}"/>
2026-12-06 20:00:01.118123 [WARNING] sofia_reg.c:1792 SIP auth failure (REGISTER) on sofia profile 'internal' for [1002@{S:ip192}] from ip 192.0.2.138
<param name="password" value="{S:pw}"/>  <!-- gateway sip.trunk.example.net -->
2026-12-06 20:02:31.004213 [INFO] mod_voicemail.c:2011 Voicemail PIN for 1003 changed to {S:pin6}
fs_cli -H 192.0.2.205 -P 8021 -p {S:pw} -x "show registrations"
<param name="odbc-dsn" value="pgsql://hostaddr=127.0.0.1 dbname=freeswitch user=fs password='{S:pw}'"/>
<param name="apiKey" value="{S:hex32}"/>  <!-- mod_callcenter webhook -->
<param name="ws-binding-password" value="{S:an20}"/>

## kamailio
kamctl add 1001@node1.example.org {S:pw}
/etc/kamailio/kamailio.cfg:14:#!define DBURL "mysql://kamailio:{S:pwu}@{S:ip10}/kamailio"
Dec  6 21:00:01 sip kamailio[4121]: INFO: <script>: REGISTER from sip:1005@{S:host} ip=192.0.2.191 auth=ok ha1={S:hex32}
INSERT INTO subscriber (username, domain, password, ha1) VALUES ('2001', 'voip.example.org', '{S:pw}', '{S:hex32}');
modparam("auth", "secret", "{S:an20}")
modparam("htable", "htable", "api=>size=4;initval=0") ; api token {S:hex40}
kamcmd -s tcp:203.0.113.119:2049 ul.dump ; credentials {S:email}:{S:an20}
modparam("topos", "mask_callid", 1) modparam("topos", "mask_key", "{S:an32}")
/etc/kamailio/kamailio.cfg:31:#!define WSPASS "{S:pw}"

## puppet
  mysql::server::root_password: '{S:b64_24}'
  profile::ldap::bind_password: "{S:pw}"
Notice: /Stage[main]/Profile::Users/User[operator]/password: changed [redacted] to [redacted]; new hash {S:sha512c}
user { 'deploy': ensure => present, password => '{S:sha512c}', home => '/home/deploy' }
puppet lookup --node broker.example.net --environment production profile::db::password   # => '{S:pw}'
Info: Caching catalog for mq.example.com; autosign psk challengePassword={S:an32}
  hiera_eyaml::private_key_passphrase: "{S:phrase}"
puppetserver ca sign --certname web-042   # csr challengePassword {S:hex32}
  profile::backup::restic_password: '{S:phrase_dash}'

## chef
knife bootstrap {S:ip10} -U ubuntu -P '{S:pw}' --sudo -N web-042
knife ssh 'role:db' 'sudo systemctl restart pg' -x {S:user} -P {S:pw}
  "db_password": "{S:pw}",
encrypted_data_bag_secret: {S:b64_64}
[2026-12-06T22:00:01+00:00] INFO: Processing template[/etc/app/secrets.yml] action create (app::default line 42) api_key={S:hex32}
chef-server-ctl user-create svc-etl Mira Santoro {S:email} '{S:pw}' --filename /home/{S:user}/.chef/client.pem
chef-server-ctl set-secret postgresql db_superuser_password '{S:an32}'
chef-vault create secret db prod -M client -J '{"password":"{S:an32}"}' -S 'role:db'
knife data bag create passwords mysql --secret '{S:b64_32}'

## cfengine
2026-12-06T23:00:01+0000    info: Trusting server identity, promise to accept key from '{S:ip10}' = 'MD5={I:md5}'
bundle agent app_secrets { vars: "db_pass" string => "{S:hex32}"; }
cf-key -p /var/cfengine/ppkeys/localhost.priv  # {S:pem}
"mail_relay_password" string => "{S:pw}", comment => "SMTP relay creds for {S:email}";
2026-12-06T23:02:14+0000   error: Failed to establish TLS connection to localhost: password for ppkey {S:an20} rejected
cf-key: Writing private key to /var/cfengine/ppkeys/localhost.priv; passphrase '{S:phrase}'
body copy_from secure_cp(from,server) { servers => { "policy.example.com" }; encrypt => "true"; } # shared secret {S:hex64}
-----BEGIN RSA PRIVATE KEY----- {S:pem} (from /var/cfengine/ppkeys/localhost.priv)
2026-12-06T23:04:00+0000  verbose: LDAP bind as cn=cfbind with password "{S:pw}"

## juju
juju add-credential openstack -f /home/{S:user}/creds.yaml
      password: {S:pw}
      application-credential-secret: {S:an48}
$ juju show-controller --show-password
    password: {S:an32}
juju config mysql-innodb-cluster root-password='{S:pw}'
juju run postgresql/leader get-password username=operator   # password: {S:an20}
machine-0: 23:10:01 INFO juju.worker.apicaller connected to 192.0.2.125:17070 as {S:user}
juju add-secret api-token token={S:hex64}
juju register {S:b64_64}
"""
ORDINARY = r"""
2026-12-06 09:14:02 [INFO] Loaded 14 entries into mysql_users; 0 with empty password field
Admin>SELECT username, active, default_hostgroup FROM mysql_users WHERE active=1;
mysql-monitor_password_min_length=12   # ProxySQL does not enforce this, see docs
2026-12-06 09:15:41 MySQL_Monitor.cpp:1402:monitor_ping(): [ERROR] Server replica-2:3306 missed 3 heartbeats
admin-admin_credentials is loaded from the environment variable PROXYSQL_ADMIN_CREDENTIALS
I1206 10:02:11.491823   4412 vtgate.go:211] mysql_auth_server_impl=static, mysql_auth_static_reload_interval=30s
vtctldclient GetKeyspaces --server localhost:15999
W1206 10:06:17.002341   4412 grpc_auth_static.go:64] grpc_auth_static_password_file not set; static auth disabled
I1206 10:07:00.000112   4412 tablet_health_check.go:301] HealthCheckUpdate(Serving State): tablet: zone1-101 (replica) serving true => false, reason: replication lag 31s
postgres=# \du+ etl_writer   -- Password valid until: infinity
ysql_enable_auth=true ysql_hba_conf_csv='host all all 0.0.0.0/0 scram-sha-256'
2026-12-06 11:22:10.338 UTC [4121] LOG:  password authentication is enabled for role "etl_reader" (method scram-sha-256)
yb-tserver --tserver_master_addrs=yb-master-0:7100,yb-master-1:7100,yb-master-2:7100 --fs_data_dirs=/mnt/d0
2026-12-06T08:01:22.118430Z I i.q.c.h.HttpServer listening on 0.0.0.0:9000 [fd=41, http.security.readonly=false]
pg.password=${QDB_PG_PASSWORD}
2026-12-06T08:02:00.000000Z I i.q.g.SqlCompiler query plan cached [sql=SELECT symbol, avg(price) FROM trades SAMPLE BY 1h, hash={I:rid}]
ilp.auth.enabled=true ilp.auth.db.path=conf/auth.txt
fly -t ci login -c https://ci.example.com --open-browser
{"timestamp":"2026-12-06T07:44:10.118304Z","level":"info","source":"atc","message":"atc.credential-manager.vault","data":{"auth_backend":"approle","path_prefix":"/concourse"}}
      password: ((docker.password))
      private_key: ((git-deploy-key.private_key))
fly -t ci hide-pipeline -p release
{"timestamp":"2026-12-06T07:47:55.440011Z","level":"info","source":"atc","message":"atc.build.started","data":{"build":1184,"build_id":"{I:rid}"}}
CONCOURSE_POSTGRES_PASSWORD_FILE=/run/secrets/pg_password
hal config security authn ldap edit --user-search-filter "(uid={0})" --manager-password
hal deploy apply --no-validate   # Validation in default.security: Your UI or API domain does not have override base URL set
2026-12-06 12:10:01.118 INFO 1 --- [           main] c.n.s.clouddriver.aws.AwsConfiguration : account prod-aws uses assumeRole role/spinnakerManaged
2026-12-06 12:14:00.901 INFO 1 --- [pool-3-thread-1] c.n.s.orca.q.handler.RunTaskHandler : Task DeployServerGroupTask completed for execution {I:ruuid}
spring.datasource.password: ${FRONT50_DB_PASSWORD}
no service password-recovery
password-policy minimum-length 14
password-policy lifetime 90
Dec 06 2026 13:02:11: %ASA-6-113005: AAA user authentication Rejected : reason = AAA failure : server = RADIUS : user = ***** : user IP = *****
show running-config tunnel-group   ! pre-shared-key *****
Dec 06 2026 13:08:01: %ASA-5-111008: User 'enable_15' executed the 'write memory' command.
crypto ikev2 policy 10 encryption aes-256 integrity sha256 group 21 prf sha256 lifetime seconds 86400
set mgt-config password-complexity minimum-length 12 minimum-uppercase-letters 1
set network ike gateway gw-branch42 authentication pre-shared-key key -AQ==
admin@PA-3220> show system info | match sw-version   sw-version: 11.1.4-h7
2026-12-06 14:11:02.338 +0000 SYSTEM auth auth-fail 0 Failed password attempts exceeded; account locked for 30 minutes.
<response status="success"><result><job>1842</job></result></response>
2026-12-06 15:00:12 device="SFW" log_type="Event" log_component="Firewall Authentication" status="Failed" message="Password expired"
console> system password-policy show  # Minimum password length: 10, Special characters: required
<Password>********</Password>
2026-12-06 15:02:45 csc: [INFO] backup job 'weekly' finished, encrypted=yes, size=38.2 MB
2026-12-06T16:01:02,118+0000 [main] INFO  org.apache.pulsar.broker.PulsarService - authenticationEnabled=true, authenticationProviders=[AuthenticationProviderToken]
tokenSecretKey=file:///pulsar/secrets/secret.key
2026-12-06T16:05:00,000+0000 [pulsar-io-4-1] INFO  org.apache.pulsar.broker.service.ServerCnx - New connection from /[::1]:50222, producer persistent://public/default/orders-partition-3
bin/pulsar-admin topics stats persistent://public/default/orders
2026-12-06 17:10:01,003 | INFO  | Using Persistence Adapter: KahaDBPersistenceAdapter[/opt/activemq/data/kahadb] | org.apache.activemq.broker.BrokerService | main
activemq.password=ENC(${ACTIVEMQ_PW})
<simpleAuthenticationUser username="guest" password="${guest.password}" groups="guests"/>
2026-12-06 17:11:11,228 | INFO  | jetty-9.4.53; built: 2023-10-09; git: {I:sha1}; jvm 17.0.9 | org.eclipse.jetty.server.Server | main
<user><name>sensor-gw</name><password>${ENV:SENSOR_GW_PASSWORD}</password></user>
2026-12-06 18:00:12,441 INFO  - Client ID: probe-{I:rid} disconnected, reason: NOT_AUTHORIZED
hivemq.control-center.user.password-hash-algorithm=SHA-256
2026-12-06 19:00:01.118 [info] <0.1894.0>@vmq_cluster_mon:handle_info:132 cluster is ready, 3 nodes
allow_anonymous = off
password_file = /etc/vernemq/vmq.passwd
password_reload_interval = 10
duplicati-cli backup "file:///mnt/usb/dup" /srv/data --passphrase-file=/run/secrets/dup_pp --no-encryption=false
2026-12-06 20:00:01 +00 - [Information-Duplicati.Library.Main.Operation.BackupHandler-CompactResults]: Deleted 4 files, which reduced storage by 412.31 MB
--auth-password=${DUP_AUTH_PASSWORD}
Console { Name = operator; Password = "@/etc/bacula/operator.pw"; CommandACL = status }
06-Dec 21:00 bk-dir JobId 4412: Bacula bk-dir 13.0.3 (12Oct23): Backup OK -- with warnings, FD Bytes Written: 1,208,311,442
Password = "xxxxxxxxxx"   # placeholder from bacula-dir.conf.sample
[06.12.2026 22:00:11] <01> Info     [BackupJob] Job 'SQL-nightly' finished with Success. Processed 1.2 TB, read 214.5 GB, transferred 88.1 GB
Add-VBRCredentials -User "CORP\svc-veeam" -Password (Get-Secret -Name VeeamSvc -AsPlainText)
[06.12.2026 22:06:00] <33> Warning  Password for credentials 'hyperv hosts' will expire in 7 days
time="2026-12-06T23:00:14Z" level=info msg="Backup completed" backup=velero/nightly logSource="pkg/backup/backup.go:449"
velero backup describe nightly-{I:rid} --details
velero install --provider aws --use-node-agent --secret-file ./credentials-velero --no-default-backup-location
time="2026-12-06T23:05:30Z" level=warning msg="Password for repository is not set, using default from secret velero-repo-credentials" logSource="pkg/repository/keys/keys.go:44"
    credentialSecret: process.env.NODE_RED_CREDENTIAL_SECRET,
6 Dec 07:12:44 - [info] Node-RED version: v4.0.5
6 Dec 07:12:45 - [info] [mqtt-broker:home] Connected to broker: mqtt://mosquitto.local:1883
6 Dec 07:13:02 - [warn] Encrypted credentials not found
{"id":"{I:rid}","type":"function","name":"mask password","func":"msg.payload.password = '****';\nreturn msg;"}
  network_key: GENERATE
  password: '!secret mqtt_password'
[2026-12-06 08:00:14] info: 	z2m: Zigbee2MQTT started! Coordinator firmware version: '20240710'
[2026-12-06 08:00:20] info: 	z2m: Device 'kitchen_sensor' joined (ieee 0x00124b00{I:rid})
api.secret="${CHIRPSTACK_API_SECRET}"
2026-12-06T09:10:05.331Z  INFO chirpstack::uplink: Uplink received dev_eui=0004a30b001c0000 f_cnt=1421 rssi=-97 snr=7.5
2026-12-06T09:11:00.000Z  INFO chirpstack::downlink: tx ack received, token={I:rid}, status=OK
[join_server] resolve_join_eui=false  # key encryption keys (kek) configured in [[join_server.servers]]
12/06/2026 20:01:11: Connections 3 ZDOS:12  sent:0 recv:512
12/06/2026 20:03:40: World saved ( 1423.112ms )
-password "" is not allowed: password must be at least 5 characters and must not contain the server name
[2026-12-06 10:00:01] production.INFO: Queue worker started, processing jobs on default,standard
DB_PASSWORD=
[2026-12-06 10:04:00] production.INFO: Server {I:ruuid} finished installing (exit code 0)
php artisan p:environment:mail   # prompts for SMTP password, not echoed
2026-12-06 21:00:01.118012|INFO    |ServerMain    |   |TeamSpeak 3 Server 3.13.7 (2022-06-20 12:21:53)
2026-12-06 21:01:09.553011|INFO    |VirtualServer |1  |client disconnected 'Goblin'(id:12) reason 'reasonmsg=leaving'
serveradmin_password is only printed on first start; reset it with serveradmin_password=<new> on the command line
2026-12-06 22:10:01 #4121(controller) <{I:rid}>; csession; rspamd_controller_handle_auth: authentication succeeded
password = "$ENV{RSPAMD_CONTROLLER_PASSWORD}";
2026-12-06 22:11:44 #4123(normal) <{I:rid}>; task; rspamd_task_write_log: (default: T (reject): [16.20/15.00] [BAYES_SPAM(5.10),DKIM_REJECT(1.00)])
[INFO] [-] [core] Loading plugin: auth/auth_proxy
[NOTICE] [{I:ruuid}] [auth/flat_file] AUTH user="<unknown>" success=false method=PLAIN
auth_methods=CRAM-MD5,PLAIN,LOGIN
API_ALLOW_FROM=127.0.0.1,::1
SKIP_CLAMD=n
Dec  6 06:01:11 mail dovecot: auth: Warning: Password scheme SSHA256 is deprecated, consider ARGON2ID
doveadm pw -l   # SHA1 SHA256 SHA512 BLF-CRYPT PLAIN CLEAR CRAM-MD5 ARGON2I ARGON2ID
2026-12-06 11:00:02,118 INFO sms.sender: POST https://api.africastalking.com/version1/messaging status=201 cost="KES 0.8000"
{"SMSMessageData":{"Message":"Sent to 0/1 Total Cost: 0","Recipients":[]}}
2026-12-06 11:03:44,902 INFO ussd: menu rendered "CON Enter your PIN"
AT_API_KEY must be set; see https://developers.africastalking.com/docs/authentication
SINCH_API_TOKEN=${SINCH_TOKEN}
2026-12-06T12:00:03.441Z sinch-voice INFO callback signature verified (algorithm HMAC-SHA256)
{"type":"delivery_report_sms","batch_id":"01HF{I:rid}","status":"Delivered","code":0}
CLICKSEND_API_KEY is read from AWS Secrets Manager arn:aws:secretsmanager:eu-west-1:000000000000:secret:clicksend
2026-12-06 13:02:10 INFO ClickSendNotifier: message queued, 1 credit used
2026-12-06 14:00:01 INFO daraja: oauth token refreshed, expires_in=3599
{"ResponseCode":"0","ResponseDescription":"Success. Request accepted for processing","CustomerMessage":"Success. Request accepted for processing"}
2026-12-06 14:01:00 INFO daraja: STK push result ResultCode=1032 ResultDesc="Request cancelled by user"
MPESA_PASSKEY_SECRET_REF=projects/payments/secrets/mpesa-passkey/versions/latest
ipa pwpolicy-mod --minlength=12 --maxfail=6 --lockouttime=600 global_policy
ipa user-mod jdoe --password-expiration=20270101000000Z
[06/Dec/2026:15:00:12.118841 +0000] conn=4121 op=1 RESULT err=49 tag=97 nentries=0 wtime=0.000112 etime=0.004211 - Invalid credentials
ipa-server-install --unattended --ds-password-file /root/dm.pw --admin-password-file /root/admin.pw
2026-12-06 16:00:01,118 INFO  [qtp-12] [org.gluu.oxauth.auth.Authenticator] Authentication failed: invalid username or password
oxauth_openid_key_pass is stored in /etc/gluu/conf/salt and never logged
"database.password": "${file:/secrets/mysql.properties:password}",
2026-12-06 17:00:01,118 INFO   ||  MySqlConnectorConfig values: database.password = ******** database.port = 3306   [io.debezium.connector.common.BaseSourceTask]
"column.mask.with.12.chars":"public.employees.ssn,public.employees.iban"
2026-12-06 17:05:00,000 INFO   ||  Snapshot step 7 - Snapshotting data, 41 tables, offset {"file":"binlog.000412","pos":15522}   [io.debezium.relational.RelationalSnapshotChangeEventSource]
INFO: Informed scheduler that task LoadOrders_2026_12_06_{I:rid} has status DONE
[core]
default-scheduler-host=luigid
password_file=/etc/luigi/db.pw
meltano config tap-github set auth_token --interactive
TAP_POSTGRES_PASSWORD=$(vault kv get -field=password secret/etl/pg)
2026-12-06T18:00:01.118843Z [info     ] Environment 'prod' is active
2026-12-06T18:01:30.000000Z [info     ] Block run completed.             set_number=0 success=True run_id={I:ruuid}
      password: "{{ secret('PG_PASSWORD') }}"
      apiKey: "{{ kv('OPENAI_API_KEY_REF') }}"
2026-12-06 19:00:01,118 INFO  worker-1 Execution {I:rid} SUCCESS in 00:01:12.443
<param name="password" value="$${default_password}"/>
2026-12-06 20:00:01.118123 [NOTICE] sofia_reg.c:1792 Registered user 1002 on profile internal, expires 3600
2026-12-06 20:02:31.004213 [INFO] mod_voicemail.c:2011 Voicemail PIN minimum length is 4 digits
<param name="vm-password" value="$${voicemail_default_pin_placeholder}"/>
modparam("auth_db", "password_column", "password")
modparam("auth_db", "calculate_ha1", yes)
Dec  6 21:00:01 sip kamailio[4121]: INFO: <script>: 401 Unauthorized sent to sip:1005, nonce stale
  mysql::server::root_password: "%{lookup('vault_mysql_root')}"
Notice: /Stage[main]/Profile::Users/User[deploy]/password: changed [redacted] to [redacted]
  profile::ldap::bind_password: >
    ENC[PKCS7,...truncated...]
Info: Applying configuration version '1796572801'
knife bootstrap web-042 -U ubuntu --ssh-identity-file ~/.ssh/id_ed25519 --sudo
[2026-12-06T22:00:01+00:00] INFO: Processing template[/etc/app/secrets.yml] action create (sensitive output suppressed)
encrypted_data_bag_secret "/etc/chef/encrypted_data_bag_secret"
2026-12-06T23:00:01+0000    info: Policy server key cached, 1 hosts trusted
"mail_relay_password" string => readfile("/var/cfengine/secrets/relay.pw", 256);
juju add-credential openstack   # Enter credential name: prod-openstack
      password: <redacted>
juju config mysql-innodb-cluster root-password=""
machine-0: 23:10:01 INFO juju.worker.uniter.operation ran "update-status" hook (via hook dispatching script: dispatch)
password_min_length=12
secret_ref: vault://kv/prod/payments#api_key
api_key: ${PAYMENT_API_KEY}
token_ttl=3600s refresh_token_rotation=true
Passwort muss mindestens 10 Zeichen lang sein.
La contraseña debe contener al menos un número.
Le mot de passe a été modifié avec succès.
A senha expira em 14 dias.
Пароль успешно изменён.
密码长度至少为八位。
パスワードを入力してください
Geheimnis wird aus dem Schlüsselbund gelesen (keychain://ci/deploy)
if (!verifyPassword(input, user.passwordHash)) { return res.status(401).json({ error: "invalid_credentials" }); }
def rotate_api_key(client_id: str, ttl_days: int = 90) -> None:
const token = process.env.GITHUB_TOKEN ?? "";
password = getpass.getpass("Vault password: ")
export AWS_SECRET_ACCESS_KEY="$(pass show aws/prod/secret)"
GET /api/v1/tokens?page=2&per_page=50 HTTP/1.1" 200 1832
POST /oauth/token HTTP/1.1" 400 62 "-" "okhttp/4.12.0"
PUT /v2/users/me/password 204 0.041s
Authorization: Bearer <token>
Authorization: Basic ****
X-Api-Key: [REDACTED]
api_key_last4=9f3a (rotated 2026-11-30)
session_timeout_minutes=30 max_sessions_per_user=5
keystore.type=PKCS12 keystore.path=/etc/ssl/private/server.p12 keystore.password.env=KEYSTORE_PASS
tls_cert_file=/etc/pki/tls/certs/broker.crt tls_key_file=/etc/pki/tls/private/broker.key
metrics: auth_failures_total{reason="bad_password"} 17
metrics: token_refresh_seconds_bucket{le="0.5"} 4412
histogram: password_hash_duration_ms p50=212 p99=498
2026-12-06 10:00:00 INFO rotated 3 secrets, 0 failures, next rotation in 30d
2026-12-06 10:00:00 WARN secret "db-creds" not found in namespace "payments"
kubectl get secret db-creds -o jsonpath='{.metadata.name}'
kubectl create secret generic db-creds --from-file=password=./pw.txt --dry-run=client -o yaml
helm upgrade --install app ./chart --set-file secrets.passwordFile=/run/secrets/pw
docker login registry.example.com --username ci --password-stdin < /run/secrets/registry
ssh-keygen -t ed25519 -C "deploy key" -f ./deploy_key -N ""
openssl rand -base64 32 > /run/secrets/new_key
gpg --batch --passphrase-fd 0 --decrypt backup.tar.gpg
The password field is empty; falling back to peer authentication.
Forgot your password? Click "Reset" to receive a link.
Security question: What was the name of your first pet?
Enter PIN:
PIN attempts remaining: 2
Passphrase strength: strong (entropy ~ 77 bits)
mnemonic_word_count=24 derivation_path="m/84'/0'/0'"
wallet restored from seed phrase (words hidden)
2026-12-06 08:00:00 INFO request_id={I:ruuid} GET /healthz 200 0.8ms
2026-12-06 08:00:01 INFO trace_id={I:rid32} span_id={I:rid} POST /api/v1/login 401 12ms
{"level":"info","msg":"job finished","job_id":"{I:ruuid}","duration_ms":4211}
{"level":"warn","msg":"retrying upload","object":"uploads/{I:rid32}.parquet","attempt":2}
2026-12-06 08:00:02 DEBUG cache miss key=user:profile:{I:rid}
X-Request-Id: {I:ruuid}
[req:{I:rid}] password reset email queued (template=reset_v3)
2026-12-06 08:00:03 INFO correlation_id={I:ruuid} token validation ok, scopes=read:orders
Etag: "{I:rid32}"
2026-12-06 08:00:04 ERROR object {I:rid32} missing from bucket, will re-fetch
version=3.4.1 build=2026-12-01 commit_count=8821
Listening on 0.0.0.0:8443 (TLS 1.3, ciphers: TLS_AES_256_GCM_SHA384)
route: /v1/secrets/{name}/versions/{version}
path: /var/lib/app/keys/public.pem
The cat sat on the password-protected keyboard and typed nothing.
She said the secret to good bread is patience, not a password.
Token bucket rate limiter: capacity=100 refill=10/s
apikey_header_name=X-Api-Key
auth.password.hashing=argon2id auth.password.pepper_ref=kms://alias/pepper
SMTP_PASSWORD is unset; outbound mail disabled
"""
VERBATIM = r"""
{I:sha256}  proxysql_2.6.5-ubuntu22_amd64.deb
{I:sha256}  vitess-19.0.4-linux-amd64.tar.gz
{I:sha256} *duplicati-2.0.8.1_beta_2024-05-07-win-x64.msi
{I:sha512}  velero-v1.14.1-linux-amd64.tar.gz
SHA256 (questdb-8.1.4-rt-linux-x86-64.tar.gz) = {I:sha256}
SHA512 (bacula-13.0.4.tar.gz) = {I:sha512}
MD5 (teamspeak3-server_linux_amd64-3.13.7.tar.bz2) = {I:md5}
sha256:{I:sha256}
Digest: sha256:{I:sha256}
Status: Downloaded newer image for docker.io/vernemq/vernemq@sha256:{I:sha256}
image: ghcr.io/koenkk/zigbee2mqtt@sha256:{I:sha256}
image: docker.io/apachepulsar/pulsar:3.3.2@sha256:{I:sha256}
  - name: velero-plugin-for-aws
    image: velero/velero-plugin-for-aws:v1.10.1@sha256:{I:sha256}
FROM quay.io/freeipa/freeipa-server:fedora-41@sha256:{I:sha256}
checksum: sha256:{I:sha256}
sha256sum: {I:sha256}
"integrity": "sha512-{I:b64sri512}"
<script src="https://cdn.example.com/red.min.js" integrity="sha384-{I:b64sri}" crossorigin="anonymous"></script>
  hash = "sha256-{I:b64sri256}";
{I:sha7} (HEAD -> main, origin/main) proxysql: raise max_connections to 4096
{I:sha7} chirpstack: bump to 4.9.0
{I:sha7} Merge pull request #4121 from ops/kamailio-tls
commit {I:sha1}
commit {I:sha1} (tag: v2.14.0)
Merge: {I:sha7} {I:sha7}
pick {I:sha7} haraka: add auth_proxy plugin
squash {I:sha7} fixup spinnaker halconfig
fixup {I:sha7} typo in velero schedule
Bisecting: 37 revisions left to test after this (roughly 5 steps)
[{I:sha1}] meltano: pin tap-postgres to 2.1.0
{I:sha1} is the first bad commit
{I:sha7} (Ops Bot  2026-11-30 14:02:11 +0000  42)     monitor_interval: 2000
^{I:sha7} (Ops Bot  2026-10-02 09:00:00 +0000   1) # kestra flows for nightly ETL
[main {I:sha7}] debezium: enable snapshot.mode=when_needed
HEAD is now at {I:sha7} luigi: retry LoadOrders on timeout
   {I:sha7}..{I:sha7}  main -> main
 + {I:sha7}...{I:sha7} feature/asa-acl -> feature/asa-acl (forced update)
Updated 3 paths from {I:sha7}
Updating {I:sha7}..{I:sha7}
256 {I:sshfp} deploy@ci (ED25519)
ED25519 key fingerprint is {I:sshfp}.
The fingerprint for the ED25519 key sent by the remote host is
{I:sshfp}.
3072 {I:sshfp} root@bk-dir (RSA)
RSA key fingerprint is MD5:{I:md5fp}.
Host key fingerprint is {I:sshfp}
{I:sshed} ops@laptop
{I:sshed}
command="/usr/local/bin/rrsync /srv/bk",restrict {I:sshed} backup-client
ssh_authorized_keys: ["{I:sshed} deploy"]
      {I:gpgfp}
pub   ed25519 2026-01-12 [SC] [expires: 2028-01-12]
      {I:gpgfp40}
sig 3        {I:gpglong} 2026-11-30  Release Signing Key
gpg: using EDDSA key {I:gpgfp40}
gpg: Good signature from "Duplicati Release Signing" [full]  Primary key fingerprint: {I:gpgfp}
Key fingerprint = {I:gpgfp}
Public key: {I:age1}
age -r {I:age1} -o backup.tar.age backup.tar
recipients: [{I:age1}, {I:age1}]
PublicKey = {I:wgpub}
[Peer]  PublicKey = {I:wgpub}  AllowedIPs = 0.0.0.0/0
peer: {I:wgpub}
/nix/store/{I:nix}-rspamd-3.9.1
/nix/store/{I:nix}-freeswitch-1.10.12/bin/freeswitch
building '/nix/store/{I:nix}-haraka-3.0.3.drv'...
copying path '/nix/store/{I:nix}-questdb-8.1.4' from 'https://cache.nixos.org'...
traceparent: {I:tp}
traceparent={I:tp}
{"level":"info","msg":"outgoing call","traceparent":"{I:tp}","peer.service":"sinch"}
Git-Commit: {I:sha1}
{I:sha1}	refs/heads/main
{I:sha1}	refs/tags/v4.9.0^{}
 "resolved": "https://registry.npmjs.org/node-red/-/node-red-4.0.5.tgz", "integrity": "sha512-{I:b64sri512}"
"""

def main():
    planted, ordinary, verbatim = [], [], []
    moved = 0
    stats = {'m': 0, 'h': 0, 'p': 0}
    lens = [0, 0, 0]
    classes = []
    for t in PLANTED.strip('\n').split('\n'):
        if not t.strip():
            planted.append('')
            continue
        if t.startswith('## '):
            classes.append(t[3:]); planted.append(t); continue
        line, vals, cats = expand(t)
        if not vals:          # nothing to plant: an ordinary line of the same tool
            ordinary.append(line); moved += 1; continue
        for v, c in zip(vals, cats):
            assert c in stats, (t, c)
            stats[c] += 1
            lens[0 if len(v) <= 11 else 1 if len(v) <= 40 else 2] += 1
        planted.append(SEP.join([line] + vals))
    for t in ORDINARY.strip('\n').split('\n'):
        line, vals, _ = expand(t)
        assert not vals
        ordinary.append(line)
    for t in VERBATIM.strip('\n').split('\n'):
        if '{I:' not in t:
            continue
        verbatim.append(expand(t)[0])
    hdr = "# blind3 {}: see README.md. Generated by gen.py; every value is random and fake.\n"
    with open('planted.txt', 'w') as f:
        f.write(hdr.format('planted lines') + '\n'.join(planted) + '\n')
    with open('ordinary.txt', 'w') as f:
        f.write(hdr.format('ordinary lines (hard negatives)') + '\n'.join(ordinary) + '\n')
    with open('verbatim.txt', 'w') as f:
        f.write(hdr.format('verbatim lines (public values, must be unchanged)') + '\n'.join(verbatim) + '\n')
    print("classes", len(classes), "moved", moved, "stats", stats, "lens", lens)

if __name__ == '__main__':
    main()
