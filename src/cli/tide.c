/*
 * tide.c: main of bin/tide, the operator's command line.
 *
 * `tide VERB [OPTIONS] ARGS` runs one verb against a store directory and
 * exits: 0 when it did what was asked, 1 when the store said no (a key is
 * absent or already present, a file is corrupt, a write failed), 2 when the
 * command line itself is wrong. Scripts rely on those three values and on
 * the verbs' argument forms; change neither lightly.
 *
 * This file holds the verb table, the global options (--help, --version,
 * --log-level), every help text, and the helpers the verbs share for
 * printing errors and parsing numbers. The verbs live in cmd_store.c
 * (create, info, put, get, visit, verify, recover, rekey), bench_store.c
 * (bench store), cmd_doctor.c, cmd_ghost.c and cmd_lab.c (lab).
 *
 * Help texts are written like man pages: synopsis, description, options
 * with their defaults, exit status, examples. `tide help VERB` and
 * `tide VERB --help` print the same text, on stdout, and exit 0.
 *
 * Logging: the store logs through tide_log (stderr). The CLI sets the level
 * to "warn" so that a command's output is only what the command prints;
 * --log-level or TIDE_LOG_LEVEL raise it.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tide/error.h"
#include "tide/store.h"
#include "util/log.h"

/* ---- help texts ---- */

static const char help_main[] =
"NAME\n"
"    tide - operate Tide stores (NuDB version 2 files)\n"
"\n"
"SYNOPSIS\n"
"    tide [--log-level LEVEL] VERB [OPTIONS] ARGS\n"
"    tide help [VERB]\n"
"    tide --help | --version\n"
"\n"
"DESCRIPTION\n"
"    A Tide store is a directory holding nudb.dat (the values, appended),\n"
"    nudb.key (the hash buckets) and, while a commit runs, nudb.log. Keys\n"
"    have a fixed size chosen at creation; values are 1 byte to 4 GiB - 1;\n"
"    a key is written once and never changed. Keys are given in hex.\n"
"\n"
"VERBS\n"
"    create PATH        make an empty store\n"
"    info PATH          print the store's headers and sizes\n"
"    put PATH KEYHEX    store stdin under a key\n"
"    get PATH KEYHEX    print a key's value on stdout\n"
"    visit PATH         walk the data file: counts, or every record in hex\n"
"    verify PATH        check every bucket and record; print the figures\n"
"    recover PATH       undo a commit a crash interrupted (nudb.log)\n"
"    rekey PATH --block-size N\n"
"                       rebuild the key file with a new block size\n"
"    bench store        measure insert and fetch throughput, memory, writes\n"
"    doctor [URL]       explain a running tided's memory from its /metrics\n"
"    ghost              measure freed memory that stays resident, per allocator\n"
"    lab                run tided with and without trims side by side; RSS chart\n"
"    help [VERB]        print this text, or a verb's\n"
"\n"
"GLOBAL OPTIONS\n"
"    --log-level LEVEL  debug, info, warn (default), error or off: what the\n"
"                       store library logs on stderr. The environment\n"
"                       variable TIDE_LOG_LEVEL does the same; the option\n"
"                       wins.\n"
"    -h, --help         print this text and exit\n"
"    -V, --version      print the version and exit\n"
"\n"
"EXIT STATUS\n"
"    0  success\n"
"    1  the operation failed: key not found, key exists, no store, store\n"
"       busy, corrupt file, I/O error\n"
"    2  usage error: unknown verb or option, bad argument\n"
"\n"
"    Errors are printed on stderr as\n"
"        tide VERB: <error name>: <what and where>\n"
"\n"
"EXAMPLES\n"
"    tide create /var/lib/tide/db --key-size 32 --block-size 16384\n"
"    printf 'hello' | tide put /var/lib/tide/db $(printf '%064x' 1)\n"
"    tide get /var/lib/tide/db $(printf '%064x' 1)\n"
"    tide info --json /var/lib/tide/db\n"
"    tide verify /var/lib/tide/db\n"
"    tide rekey /var/lib/tide/db --block-size 16384\n"
"    tide bench store --items 100000 --runs 3\n"
"\n"
"    Run 'tide help VERB' for a verb's options.\n";

static const char help_create[] =
"NAME\n"
"    tide create - make an empty store\n"
"\n"
"SYNOPSIS\n"
"    tide create PATH [--key-size N] [--block-size N] [--load-factor F]\n"
"                     [--appnum N]\n"
"\n"
"DESCRIPTION\n"
"    Creates the directory PATH when it is missing (only PATH itself: its\n"
"    parent must exist) and writes an empty store into it: nudb.dat and\n"
"    nudb.key with their headers and one empty bucket, both synced, then\n"
"    the directory. The uid and the hash salt are random. Prints the new\n"
"    store's settings on stdout.\n"
"\n"
"    Nothing is changed when PATH already holds a nudb.dat or nudb.key, or\n"
"    when an option is bad (a directory made by this command is removed\n"
"    again when the create fails).\n"
"\n"
"OPTIONS\n"
"    --key-size N     bytes per key, 1 to 65535. Default 32.\n"
"    --block-size N   key-file block size: a power of two from 4096 to\n"
"                     32768. Default 4096. An invalid value (5000, abc)\n"
"                     is not an error: it prints a warning that names the\n"
"                     value and uses 4096, as the node's config does for\n"
"                     [node_db] nudb_block_size.\n"
"    --load-factor F  target bucket fullness, greater than 0 and at most\n"
"                     1. Default 0.5. Stored in 1/65536 units.\n"
"    --appnum N       application number stored in the headers (any\n"
"                     64-bit unsigned value, decimal or 0x hex). Default 1.\n"
"    -h, --help       print this text\n"
"\n"
"EXIT STATUS\n"
"    0 created; 1 PATH's parent is missing, a store is already there, or\n"
"    a write failed; 2 bad option or argument (nothing is created).\n"
"\n"
"EXAMPLES\n"
"    tide create /var/lib/tide/db\n"
"    tide create db8 --key-size 8 --block-size 16384 --load-factor 0.75\n";

static const char help_info[] =
"NAME\n"
"    tide info - print a store's headers and sizes\n"
"\n"
"SYNOPSIS\n"
"    tide info PATH [--json]\n"
"\n"
"DESCRIPTION\n"
"    Reads the headers of nudb.dat, nudb.key and nudb.log (when present)\n"
"    and the three file sizes. Takes no lock, runs no recovery, writes\n"
"    nothing: it is safe while a node has the store open.\n"
"\n"
"    Prints: file type and format version, uid, appnum, key size, salt,\n"
"    pepper, block size, load factor (raw, in 1/65536, and as a fraction),\n"
"    capacity (entries per bucket: (block_size - 8) / 18), the number of\n"
"    buckets, the sizes of nudb.dat, nudb.key and nudb.log, and whether a\n"
"    recovery is pending: nudb.log holds an unfinished commit, a crash's\n"
"    or a live writer's (NuDB takes no lock, so nothing tells them apart);\n"
"    'tide recover', when no process writes the store, undoes it.\n"
"\n"
"OPTIONS\n"
"    --json       print one JSON object instead. 64-bit identifiers (uid,\n"
"                 salt, pepper) are strings of the form \"0x...\" so that\n"
"                 no JSON reader rounds them.\n"
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 printed; 1 no store at PATH, not a NuDB file, headers disagree or\n"
"    are corrupt; 2 usage error.\n"
"\n"
"EXAMPLES\n"
"    tide info /var/lib/tide/db\n"
"    tide info --json /var/lib/tide/db | jq .block_size\n";

static const char help_put[] =
"NAME\n"
"    tide put - store a value under a key\n"
"\n"
"SYNOPSIS\n"
"    tide put PATH KEYHEX [--force] < VALUE\n"
"\n"
"DESCRIPTION\n"
"    Reads all of stdin as the value (binary-safe; 1 byte to 4 GiB - 1),\n"
"    opens the store read-write (running recovery if nudb.log holds an\n"
"    interrupted commit), inserts, waits for the commit that makes the\n"
"    value durable (tide_store_sync), and closes. KEYHEX is the key in hex,\n"
"    upper or lower case, exactly 2 x key_size digits.\n"
"\n"
"    The store is locked while open: put fails at once with 'store is\n"
"    busy' when a node or another put holds it, and writes nothing. It\n"
"    also refuses while any other process has one of the store's files\n"
"    open (NuDB, which takes no lock; a reader), naming the process.\n"
"\n"
"OPTIONS\n"
"    --force      write even though another process has the store's files\n"
"                 open (never while a Tide process holds its lock)\n"
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 stored and durable; 1 the key already exists (the stored value is\n"
"    unchanged), no store, store busy, I/O error; 2 bad key (not hex, or\n"
"    the wrong length for this store), empty stdin, usage error.\n"
"\n"
"EXAMPLES\n"
"    printf 'hello' | tide put db $(printf '%064x' 1)\n"
"    tide put db 00ff...ee < blob.bin\n";

static const char help_get[] =
"NAME\n"
"    tide get - print the value of a key\n"
"\n"
"SYNOPSIS\n"
"    tide get PATH KEYHEX > VALUE\n"
"\n"
"DESCRIPTION\n"
"    Fetches the value stored under KEYHEX and writes it, byte for byte,\n"
"    to stdout (no newline is added). Opens the store read-only with a\n"
"    shared lock and never writes anything. Other readers (another get, a\n"
"    verify) may run alongside; a writer may not:\n"
"\n"
"    - While a Tide process has the store open for writing (a node, a\n"
"      put, a rekey) get is refused at once with 'store is busy': read\n"
"      through that process instead (the node's GET /v1/objects/KEYHEX).\n"
"    - While nudb.log holds an unfinished commit, get is refused with\n"
"      'nudb.log holds an unfinished commit of N bytes; run tide recover\n"
"      when no process writes the store'. The log is a crash's, or a live\n"
"      NuDB writer's (NuDB takes no lock, so nothing tells them apart), so\n"
"      get never recovers it: 'tide recover PATH' does, and refuses while\n"
"      any process has the store's files open.\n"
"\n"
"    A NuDB process writing the store takes no lock, so between its\n"
"    commits get does not know it is there; a read may then meet a commit\n"
"    half written (an error, or the key not found yet). get still changes\n"
"    nothing.\n"
"\n"
"    An absent key prints 'tide get: KEYHEX: not found' on stderr.\n"
"\n"
"OPTIONS\n"
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 found; 1 not found, no store, store busy (a writer has it open),\n"
"    an unfinished commit in nudb.log (nothing is read or written),\n"
"    corrupt file, I/O error; 2 bad key (not hex, or the wrong length for\n"
"    this store), usage error.\n"
"\n"
"EXAMPLES\n"
"    tide get db $(printf '%064x' 1)\n"
"    tide get db 00ff...ee > blob.bin || echo absent\n";

static const char help_visit[] =
"NAME\n"
"    tide visit - walk a store's data file\n"
"\n"
"SYNOPSIS\n"
"    tide visit PATH [--hex]\n"
"\n"
"DESCRIPTION\n"
"    Reads nudb.dat from its header to its end, in file order, and never\n"
"    changes anything. Without --hex it prints the number of data records,\n"
"    their key and value bytes, a histogram of value sizes in power-of-two\n"
"    buckets ([1,2), [2,4), ... bytes), and the number and bytes of spill\n"
"    records (bucket overflow copies that NuDB appends to the data file).\n"
"\n"
"    With --hex it prints one line per data record: KEYHEX VALUEHEX.\n"
"\n"
"    The walk sees every record in the file, including records appended\n"
"    by an interrupted commit that a recovery would cut off; visit warns\n"
"    on stderr when nudb.log says a recovery is pending.\n"
"\n"
"OPTIONS\n"
"    --hex        print every data record as KEYHEX VALUEHEX\n"
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 walked; 1 no store, a record runs past the end of the file (the\n"
"    offset is printed), I/O error; 2 usage error.\n"
"\n"
"EXAMPLES\n"
"    tide visit db\n"
"    tide visit db --hex | wc -l\n";

static const char help_verify[] =
"NAME\n"
"    tide verify - check a store's files and print its figures\n"
"\n"
"SYNOPSIS\n"
"    tide verify PATH [--json]\n"
"\n"
"DESCRIPTION\n"
"    Checks the store as NuDB's verify does, and more, and never changes\n"
"    anything. It opens the store read-only (a shared lock: readers may\n"
"    run alongside, a writer may not), reads every bucket of nudb.key and\n"
"    its spill chain, and checks that each bucket is well formed (count\n"
"    within capacity, entries in hash order, every entry inside nudb.dat),\n"
"    that every entry sits in the bucket its hash names and points at a\n"
"    data record of the entry's size whose key hashes to the entry's\n"
"    hash, that no two entries point at one record, and that every spill\n"
"    pointer points at a spill record of a full bucket. Then it walks\n"
"    nudb.dat and checks that every data record is reached by exactly one\n"
"    entry, and that every spill record, reached or not, has the size of\n"
"    a full bucket at this block size, as NuDB's verify does: spill\n"
"    records of another block size (left by a rekey from it) make the\n"
"    store one NuDB's verify rejects ('invalid size in spill'), so verify\n"
"    prints the figures with the verdict 'NOT SOUND for NuDB's verify'\n"
"    and exits 1, though reads and writes are not affected.\n"
"\n"
"    When the store is sound it prints: the number of keys, their value\n"
"    bytes, the data records in nudb.dat, the buckets and their capacity\n"
"    (entries per bucket), the load (keys / (buckets x capacity)), the\n"
"    spill records reachable from a bucket and those written to nudb.dat,\n"
"    the waste (bytes of spill records no chain reaches any more, and\n"
"    their share of nudb.dat), the average number of bucket reads a fetch\n"
"    of a present key makes (1 + the depth in the spill chain), and the\n"
"    sizes of nudb.dat and nudb.key.\n"
"\n"
"    When it is not, it prints the first problem found, naming the file\n"
"    and the offset (and the bucket), e.g.\n"
"        tide verify: file is corrupt: db/nudb.key: bucket 3 (offset\n"
"        16384): entry 7 is out of hash order\n"
"\n"
"    A store whose nudb.log holds an unfinished commit is not checked, and\n"
"    verify writes nothing to it (a read-only tool never recovers: the log\n"
"    may be a live NuDB writer's): run 'tide recover PATH' first, when no\n"
"    process writes the store.\n"
"\n"
"OPTIONS\n"
"    --json       print one JSON object on stdout: \"sound\" (true or\n"
"                 false), \"error\" and \"problem\" (null when sound), and\n"
"                 the figures as numbers: keys, value_bytes, data_records,\n"
"                 buckets, capacity, block_size, load,\n"
"                 spill_records_reachable, spill_records_written,\n"
"                 spill_records_foreign (of another block size),\n"
"                 waste_bytes, waste (a fraction of nudb.dat),\n"
"                 avg_fetch_reads, dat_file_bytes, key_file_bytes. For\n"
"                 an unsound store the figures are those counted before\n"
"                 the problem; the exit status is still 1 and the\n"
"                 problem is printed on stderr too. When the store cannot\n"
"                 be checked at all (missing, busy, recovery pending)\n"
"                 nothing is printed on stdout.\n"
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 sound; 1 not sound (the problem is printed), no store, store busy\n"
"    (a writer has it open), recovery pending, I/O error; 2 usage error.\n"
"\n"
"COST\n"
"    One pass over nudb.key, one data-file read per key, one sequential\n"
"    pass over nudb.dat; memory about 8 bytes per key.\n"
"\n"
"EXAMPLES\n"
"    tide verify /var/lib/tide/db\n"
"    tide verify --json db | jq '.sound, .waste'\n"
"    tide verify db || echo 'db is damaged'\n";

static const char help_recover[] =
"NAME\n"
"    tide recover - undo a commit that a crash interrupted\n"
"\n"
"SYNOPSIS\n"
"    tide recover PATH [--force]\n"
"\n"
"DESCRIPTION\n"
"    A commit first writes the old image of every bucket it will change\n"
"    to nudb.log, with the sizes nudb.key and nudb.dat had before it. A\n"
"    crash in the middle of a commit leaves that log behind. Recovery does\n"
"    what NuDB does: it writes every complete old bucket image back into\n"
"    nudb.key, truncates nudb.key and nudb.dat to the recorded sizes (the\n"
"    values of the interrupted commit are lost; everything committed\n"
"    before it is kept), syncs both files and deletes nudb.log. Running it\n"
"    again, or after a crash during it, gives the same result.\n"
"\n"
"    A read-write open (tide put, tide rekey, the node) recovers by\n"
"    itself; the read-only tools (get, info, visit, verify) never do. This\n"
"    verb does it alone and says what it did:\n"
"        no nudb.log: nothing to recover\n"
"        deleted a partial log of N bytes (shorter than its header: the\n"
"            crash came before the commit changed anything)\n"
"        deleted an empty nudb.log: nothing to undo\n"
"        undid an interrupted commit: N buckets restored from nudb.log;\n"
"            nudb.key X -> Y bytes; nudb.dat X -> Y bytes\n"
"        an interrupted key-file rebuild: nudb.dat truncated to Y bytes,\n"
"            nudb.key deleted; run tide rekey to build it again\n"
"        removed a nudb.key of N bytes that held no complete bucket: with\n"
"            no commit to undo, a key file shorter than its header block\n"
"            and one bucket is what a rebuild (NuDB's rekey) killed after\n"
"            writing the header leaves; no committed store is that small.\n"
"            Like the interrupted rebuild's, it is removed (the data file\n"
"            is the truth); run tide rekey to build it\n"
"\n"
"    While another process has the store open its nudb.log belongs to a\n"
"    live commit, and undoing it would destroy that process's work. So\n"
"    recover refuses with 'store is busy', changing nothing, when a Tide\n"
"    process holds the store's lock, and also when any other process has\n"
"    nudb.dat, nudb.key or nudb.log open (it looks through /proc/PID/fd\n"
"    and names the process: pid and name). The second check is the one\n"
"    that sees NuDB, which takes no lock: an XRP Ledger node writing its\n"
"    store looks, to the lock, exactly like a crashed one. Only processes\n"
"    this user may look into are seen (all of them as root).\n"
"\n"
"OPTIONS\n"
"    --force      recover even though another process has the store's\n"
"                 files open (a backup, a reader): skips the /proc check,\n"
"                 never the lock. Use it only when that process does not\n"
"                 write the store.\n"
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 recovered, or nothing to recover; 1 store busy (a lock, or a\n"
"    process with the files open; nothing is changed), no store, the log\n"
"    belongs to another store, a file is corrupt, I/O error (the log is\n"
"    kept so that recovery can run again); 2 usage error.\n"
"\n"
"EXAMPLES\n"
"    tide recover /var/lib/tide/db\n"
"    tide recover db && tide verify db\n";

static const char help_rekey[] =
"NAME\n"
"    tide rekey - rebuild the key file with a new block size\n"
"\n"
"SYNOPSIS\n"
"    tide rekey PATH --block-size N [--load-factor F] [--buffer SIZE]\n"
"               [--force]\n"
"    tide rekey PATH [--block-size N] ...   (nudb.key missing or unusable)\n"
"\n"
"DESCRIPTION\n"
"    Builds a new nudb.key for the store in PATH from its data file, with\n"
"    block size N (and load factor F), the way an operator changes\n"
"    [node_db] nudb_block_size on an existing node. The values in nudb.dat\n"
"    stay where they are: every data record is indexed afresh, so the old\n"
"    key file is replaced, never read. The new table has\n"
"    ceil(records / (capacity x F)) buckets, where capacity is\n"
"    (N - 8) / 18 entries; a bucket that overflows spills, as NuDB's do,\n"
"    into a record appended to nudb.dat.\n"
"\n"
"    A missing nudb.key, or one that open refuses (grown or cut, holding\n"
"    no complete bucket, of another store, damaged: the first line of the\n"
"    output says why), is built the same way from nudb.dat alone: uid,\n"
"    appnum and key size come from nudb.dat's header, the salt and load\n"
"    factor from the old key file's header when it is this store's (else\n"
"    a new salt and 0.5), the block size from --block-size or else 4096.\n"
"    Its log says key_file_size 0, NuDB's mark of a rebuild, so a crash\n"
"    during it cuts nudb.dat back and removes the unusable key file, and\n"
"    the next rekey starts again.\n"
"\n"
"    The store is opened read-write, so rekey needs the store to itself:\n"
"    while a node (or a put) has it open, rekey refuses with 'store is\n"
"    busy' and changes nothing; so it does while any other process has\n"
"    one of the store's files open (NuDB takes no lock), naming it. A\n"
"    nudb.log left by a crash is recovered first, as any read-write open\n"
"    does, and rekey says so.\n"
"\n"
"    The new key file is written as nudb.key.new in passes: each pass\n"
"    walks nudb.dat once and fills the buckets that fit in the buffer, so\n"
"    memory stays about SIZE however large the store is, and a new table\n"
"    that does not fit in SIZE takes several passes. Then nudb.dat and\n"
"    nudb.key.new are synced and nudb.key.new is renamed over nudb.key;\n"
"    that one rename is the switch.\n"
"\n"
"    When it is interrupted (kill -9, power loss, a failed write, a full\n"
"    disk) the store is either the old one or the new one, never a broken\n"
"    one. Before the rename it is the old store: the next recovery (tide\n"
"    recover, or any read-write open: tide put, the node, rekey itself)\n"
"    cuts off the spill records this rekey had appended to nudb.dat, using\n"
"    the nudb.log it wrote first, and a read-write open removes the\n"
"    partial nudb.key.new. Between the final syncs and the rename the log\n"
"    is already empty; then nudb.rekey, written just before, says where\n"
"    the appended spill records start, and the next read-write open (or\n"
"    tide recover) cuts them off: left under the old key file, spill\n"
"    records of the new block size make NuDB's verify reject the store\n"
"    ('invalid size in spill'). After the rename it is the new store.\n"
"    Either way every value is kept; run rekey again to finish.\n"
"\n"
"    The spill records of the OLD block size (bucket overflows of the old\n"
"    table) cannot be removed short of rewriting nudb.dat: they stay,\n"
"    unreachable. Tide and NuDB read and write the store as before, but\n"
"    NuDB's verify rejects spill records of another size than the key\n"
"    file's buckets, and so does tide verify. rekey counts them and says\n"
"    so ('old spills' in its output) when there are any.\n"
"\n"
"    On a terminal, progress is shown on stderr as one line that is\n"
"    redrawn at most ten times a second:\n"
"        rekey: pass 1/2   37%  12 MiB of 32 MiB read  410 MiB/s\n"
"    When stderr is not a terminal nothing is printed there. At the end\n"
"    it prints on stdout what it did: the records indexed, the block size\n"
"    and capacity old -> new, the load factor, the buckets old -> new,\n"
"    the passes, the spill records appended, and the sizes of nudb.key\n"
"    and nudb.dat before and after.\n"
"\n"
"OPTIONS\n"
"    --block-size N   the new block size; required, except when nudb.key is\n"
"                     missing or unusable (then 4096). A power of two from\n"
"                     4096 to 32768: 4096, 8192, 16384 or 32768. Any other\n"
"                     value (5000, abc) is a usage error (exit 2) and the\n"
"                     store is not touched: unlike tide create and the\n"
"                     node's nudb_block_size, which fall back to 4096 with\n"
"                     a warning, rekey rewrites a key file, so a typo must\n"
"                     not. The old block size may be anything NuDB writes\n"
"                     (512, say).\n"
"    --load-factor F  target bucket fullness of the new table, greater than\n"
"                     0 and at most 1. Default: the store's own (shown by\n"
"                     tide info).\n"
"    --buffer SIZE    memory for the buckets of one pass, e.g. 512MiB,\n"
"                     64MB or 1048576 (K, M, G, T: powers of 1024; KB, MB,\n"
"                     GB, TB: powers of 1000). Default 64 MiB. At least one\n"
"                     bucket is indexed per pass, however small SIZE is.\n"
"    --force          rekey even though another process has the store's\n"
"                     files open (never while a Tide process holds it)\n"
"    -h, --help       print this text\n"
"\n"
"EXIT STATUS\n"
"    0 rekeyed; 1 store busy (nothing is changed), no store, a file is\n"
"    corrupt, I/O error or full disk (the store is the old one, or the\n"
"    new one when the error came after the switch, while syncing the\n"
"    directory or closing; tide info shows which); 2 usage error: no\n"
"    PATH, no --block-size or an invalid one (such as 5000), a bad\n"
"    --load-factor (such as 1.5) or --buffer, an unknown option (nothing\n"
"    is read or changed).\n"
"\n"
"    Errors are printed on stderr as\n"
"        tide rekey: <error name>: <what and where>\n"
"\n"
"COST\n"
"    Memory about SIZE. A bucket of the pass takes capacity x 24 + 16\n"
"    bytes of the buffer (about 4/3 of N), so a pass indexes about\n"
"    SIZE / (1.34 x N) buckets: the 64 MiB default does a key file of up\n"
"    to about 47 MiB in one pass. I/O: one sequential read of nudb.dat to\n"
"    count the records and one per pass, one write of the new key file,\n"
"    the spill records appended to nudb.dat, five syncs (nudb.log,\n"
"    nudb.dat, nudb.key.new, nudb.log, the directory) and a rename.\n"
"\n"
"EXAMPLES\n"
"    tide rekey /var/lib/tide/db --block-size 16384\n"
"    tide rekey db --block-size 32768 --load-factor 0.75 --buffer 512MiB\n"
"    tide rekey db --block-size 8192 && tide verify db\n";

static const char help_bench[] =
"NAME\n"
"    tide bench store - measure the store: throughput, memory, writes\n"
"\n"
"SYNOPSIS\n"
"    tide bench store [--items N] [--value-size N] [--block-size N]\n"
"                     [--runs N] [--dir DIR] [--burst SIZE] [--seed N]\n"
"                     [--keep] [--json]\n"
"\n"
"DESCRIPTION\n"
"    Each run creates a fresh store (key size 32, load factor 0.5) in its\n"
"    own directory and runs two phases, one thread each:\n"
"\n"
"    LOAD   inserts N items, then tide_store_sync(); timed from the first\n"
"           insert to the return of the sync. Keys are 32 random bytes,\n"
"           values value-size random bytes, both from splitmix64 streams\n"
"           of the item's index (the formula of tests/fixtures/nudb), so\n"
"           the values are made on the fly and never held by the bench;\n"
"           the keys are made on the fly too.\n"
"    FETCH  fetches every key once in a shuffled order (a keyed Feistel\n"
"           permutation of the indexes) and compares each\n"
"           value byte for byte with the one inserted (a mismatch stops\n"
"           the bench with exit status 1). The page cache is warm.\n"
"\n"
"    For each phase it reports: items/s; peak RSS split into anonymous\n"
"    and file-backed memory (a sampler thread reads /proc/self/status every\n"
"    10 ms and keeps the maximum; VmHWM is reset before the phase through\n"
"    /proc/self/clear_refs where permitted, and reported too); bytes\n"
"    written, from /proc/self/io (write_bytes: sent to the storage layer;\n"
"    wchar: passed to write calls), from the store's own counter, and from\n"
"    the block device holding DIR (/sys/dev/block/MAJ:MIN/stat; it counts\n"
"    every process's writes, so keep the machine quiet); and the commits\n"
"    and syncs the store made.\n"
"\n"
"    After the runs it prints a summary: median and range (min-max) of\n"
"    items/s per phase, the durability mode, the file sizes, peak RSS,\n"
"    bytes written, and the write amplification of the load: device bytes\n"
"    written / (N x (32 + value-size)), and the same from write_bytes.\n"
"\n"
"OPTIONS\n"
"    --items N        items per run. Default 100000.\n"
"    --value-size N   bytes per value (1MB, 4KiB forms accepted). Default\n"
"                     200.\n"
"    --block-size N   key-file block size, as for tide create (invalid\n"
"                     values warn and use 4096). Default 4096.\n"
"    --runs N         runs; the summary takes medians over them. Default 3.\n"
"    --dir DIR        make the bench directory under DIR (which must\n"
"                     exist). Default: a fresh directory under /tmp.\n"
"    --burst SIZE     insert pool bound (tide_store_opts.burst_bytes), e.g.\n"
"                     16MiB. Default 16 MiB.\n"
"    --seed N         data seed, 0 to 2147483647; 0 gives the keys of the\n"
"                     fixtures' formula. Default 0.\n"
"    --keep           keep the stores (default: each is removed after its\n"
"                     run; a failed run's store is always kept, and its\n"
"                     path printed)\n"
"    --json           print the results as one JSON object on stdout (the\n"
"                     progress lines go to stderr)\n"
"    -h, --help       print this text\n"
"\n"
"    Memory: the bench holds O(1) memory of its own (keys, values and the\n"
"    shuffled order are computed per item), so the RSS it reports is the\n"
"    store's.\n"
"\n"
"EXIT STATUS\n"
"    0 done; 1 a store call failed or a fetched value differed; 2 usage\n"
"    error.\n"
"\n"
"EXAMPLES\n"
"    tide bench store\n"
"    tide bench store --items 20000 --runs 3\n"
"    tide bench store --items 1000000 --value-size 1KiB --block-size 16384 \\\n"
"                     --dir /mnt/nvme --json > bench.json\n";

static const char help_doctor[] =
"NAME\n"
"    tide doctor - explain a running node's memory in a few lines\n"
"\n"
"SYNOPSIS\n"
"    tide doctor [--json] [--timeout S] [URL]\n"
"\n"
"DESCRIPTION\n"
"    Reads the node's /metrics page (URL; default http://127.0.0.1:8080,\n"
"    and a URL without a path gets /metrics) and says, the way Redis's\n"
"    MEMORY DOCTOR does:\n"
"      - RSS against what the allocator says is live;\n"
"      - what the allocator holds free: the most a trim could return;\n"
"      - the consumers of memory, largest first, each against its budget;\n"
"      - the trims: how many, how often they lowered RSS, what they returned,\n"
"        their median and p95 duration (estimated from the histogram), and\n"
"        the page faults they cost;\n"
"      - each consumer left unbounded, and the setting that would bound it.\n"
"    Figures the page lacks are reported as unknown, never as zero.\n"
"\n"
"OPTIONS\n"
"    --json         print the same analysis as one JSON object\n"
"    --timeout S    give up after S seconds (default 10)\n"
"\n"
"ENVIRONMENT\n"
"    TIDE_METRICS_TOKEN   sent as \"Authorization: Bearer <token>\" when set.\n"
"                         Never printed.\n"
"\n"
"EXIT STATUS\n"
"    0 the page was read and explained; 1 the node could not be reached,\n"
"    refused the token (401), or the page is not a Tide node's; 2 usage.\n"
"\n"
"EXAMPLES\n"
"    TIDE_METRICS_TOKEN=$(cat /etc/tide/metrics.token) tide doctor\n"
"    tide doctor --json http://10.0.0.5:8080 | jq .allocator_free_bytes\n";

static const char help_ghost[] =
"NAME\n"
"    tide ghost - measure the RSS ghost: freed memory that stays resident\n"
"\n"
"SYNOPSIS\n"
"    tide ghost [--scenario NAME[,NAME...]] [--variant NAME[,NAME...]]\n"
"               [--size FACTOR] [--json | --csv]\n"
"\n"
"DESCRIPTION\n"
"    Runs every selected scenario under every selected allocator variant,\n"
"    each pair in a fresh child process (tide re-executes itself with the\n"
"    variant's environment and LD_PRELOAD). The child checks that the\n"
"    variant took effect, writes every byte it allocates, and reads RSS\n"
"    from /proc/self/statm at the start, after allocating (the peak) and\n"
"    after freeing. Its bookkeeping lives in mmap'd memory that is part\n"
"    of the start reading, never in the allocator under test.\n"
"\n"
"        ghost = RSS after freeing - RSS at start - bytes still live\n"
"\n"
"    as measured (it may be negative). The memory came back when the\n"
"    ghost is under 10% of the growth from start to peak. docs/GHOST.md\n"
"    explains the figures.\n"
"\n"
"  Scenarios (about 12 MiB freed each at --size 1)\n"
"    small-batch   2 rounds of 250000 objects of 48 B; after each batch a\n"
"                  48 B receipt is allocated and kept, then the batch is\n"
"                  freed (the receipt stands for whatever a program\n"
"                  allocates between making a batch and dropping it)\n"
"    medium-batch  the same with 200 objects of 60 KiB\n"
"    large-batch   the same with 60 objects of 200 KiB (glibc serves the\n"
"                  first round by mmap, then raises its mmap threshold)\n"
"    mixed         1000 groups of an 8 KiB vector buffer (kept) and 128\n"
"                  items of 96 B (freed), allocated alternately\n"
"    lifetime      12000 pairs of a 256 B long-lived object (kept) and a\n"
"                  600-1400 B short-lived one (freed)\n"
"    business      2000 requests into a tide_cache: a 16 KiB scratch\n"
"                  buffer, 20 inserts (mostly 525 B), 10 lookups, a sweep\n"
"                  every 50 requests; then every entry ages out\n"
"    threads       the mixed pattern on 4 threads at once (glibc gives\n"
"                  each thread its own arena)\n"
"\n"
"  Variants\n"
"    glibc          glibc's malloc, defaults\n"
"    glibc-mmap16k  MALLOC_MMAP_THRESHOLD_=16384 (blocks of 16 KiB and\n"
"                   more are mmap'd and munmap'd on free)\n"
"    glibc-trim     malloc_trim(0) after the frees, before the reading\n"
"    glibc-arena2   MALLOC_ARENA_MAX=2\n"
"    jemalloc       LD_PRELOAD of libjemalloc.so.2, defaults\n"
"    jemalloc-bg    MALLOC_CONF=background_thread:true,dirty_decay_ms:1000;\n"
"                   the child waits 3 s after the frees so the decay\n"
"                   can act before the reading (at 1.5 s it has done only\n"
"                   part of its work; see docs/GHOST.md)\n"
"    tcmalloc       LD_PRELOAD of libtcmalloc_minimal.so.4, defaults\n"
"    mimalloc       LD_PRELOAD of libmimalloc.so.2, defaults\n"
"    The libraries are looked for in the directory of the running libc\n"
"    (e.g. /lib/x86_64-linux-gnu), then /usr/local/lib, /usr/lib64 and\n"
"    /usr/lib. A missing one makes its rows 'skipped', naming the Debian\n"
"    package (libjemalloc2, libtcmalloc-minimal4, libmimalloc2.0). A\n"
"    variant that does not take effect (another allocator serves malloc,\n"
"    jemalloc did not read MALLOC_CONF, a 32 KiB block is not mmap'd\n"
"    under glibc-mmap16k) makes its rows fail. Allocator variables of\n"
"    tide's own environment (LD_PRELOAD, MALLOC_*, GLIBC_TUNABLES, ...)\n"
"    are removed from every child's.\n"
"\n"
"OPTIONS\n"
"    --scenario LIST  comma-separated scenario names. Default: all.\n"
"    --variant LIST   comma-separated variant names. Default: all.\n"
"    --size FACTOR    scale the object counts, greater than 0 and at most\n"
"                     64. Default 1 (the whole matrix takes about 35 s,\n"
"                     21 of them jemalloc-bg's waits).\n"
"    --json           print one JSON object (below) instead of the table\n"
"    --csv            print a header line and one line per row\n"
"    -h, --help       print this text\n"
"\n"
"OUTPUT\n"
"    The table starts with the machine: page size, kernel, glibc version\n"
"    and each preloadable allocator's version (or absent). RSS figures\n"
"    are in MiB.\n"
"\n"
"    --json prints {\"machine\": {page_size, kernel, glibc,\n"
"    tide_allocator, allocators: {glibc, jemalloc, tcmalloc, mimalloc:\n"
"    version or null}}, \"size\", \"wall_seconds\", \"results\": [...]}.\n"
"    Each result (and each --csv line) has: scenario, variant, skipped\n"
"    (true/false), status (ok, skipped or failed), reason (why it was\n"
"    skipped or failed), package (the Debian package to install, for a\n"
"    missing library), allocator and allocator_version (as the child\n"
"    detected them), rss_start_bytes, rss_peak_bytes,\n"
"    rss_after_free_bytes, live_bytes, ghost_bytes, peak_growth_bytes\n"
"    (peak - start), returned (ghost under 10% of the growth),\n"
"    allocated_bytes and objects (all requests made), threads, arenas\n"
"    (glibc's arena count at the end), trim_result (malloc_trim's return\n"
"    under glibc-trim), wait_ms, elapsed_ms. A row that is not ok has null\n"
"    figures (empty fields in CSV).\n"
"\n"
"EXIT STATUS\n"
"    0 every row ran or was skipped; 1 a row failed (the reason is in the\n"
"    row and on stderr); 2 usage error (an unknown scenario or variant, a\n"
"    bad --size).\n"
"\n"
"EXAMPLES\n"
"    tide ghost\n"
"    tide ghost --scenario mixed --variant glibc,glibc-trim\n"
"    tide ghost --size 0.1 --json | jq '.results[] | [.scenario, .variant, .ghost_bytes]'\n"
"    tide ghost --csv > ghost.csv\n";

static const char help_lab[] =
"NAME\n"
"    tide lab - run tided with and without trims side by side and chart RSS\n"
"\n"
"SYNOPSIS\n"
"    tide lab [--variant NAME[,NAME...]] [--custom NAME=FLAGS]...\n"
"             [--duration S] [--ledgers N] [--ledger-interval S]\n"
"             [--objects N] [--reads N] [--wave N] [--wave-pct P]\n"
"             [--clients N] [--seed N]\n"
"             [--warmup S] [--repeat N] [--sweep-interval S]\n"
"             [--node-size SIZE] [--node-args FLAGS] [--out DIR]\n"
"             [--prefix NAME] [--referenced] [--json] [--keep]\n"
"\n"
"DESCRIPTION\n"
"    Starts one tided per variant at once, on 127.0.0.1, each with a fresh\n"
"    store in a scratch directory, and the same node settings (--node-size,\n"
"    default tiny: a 64 MiB cache budget and a 30 s cache age, so that the\n"
"    node cache frees memory at every sweep; --sweep-interval, default 10).\n"
"    Then drives every node with the same synthetic ledger workload from\n"
"    --clients threads, each holding one keep-alive HTTP connection per\n"
"    node and sending each request to every node in turn, in an order\n"
"    shuffled per repetition.\n"
"\n"
"    A ledger, every --ledger-interval seconds, PUTs --objects new objects\n"
"    (60% of about 525 bytes, like inner nodes, the rest from 100 bytes to\n"
"    2 KiB) and GETs --reads objects spread among them: half from the two\n"
"    previous ledgers, half from any earlier ledger (mostly store reads the\n"
"    cache then holds until they age out). The number of new objects\n"
"    rises and falls in a slow wave (--wave, --wave-pct): under a perfectly\n"
"    steady load glibc reuses every freed chunk and a trim finds little to\n"
"    return (docs/LAB.md). Every byte is a function of --seed. A ledger\n"
"    that takes longer than its interval is counted late and the next\n"
"    starts at once: check the count, the run is meant to be a plateau, not\n"
"    a saturation test.\n"
"\n"
"    tide lab samples each node's RSS every second from /proc/PID/statm\n"
"    (and Referenced from smaps_rollup with --referenced), and collects every\n"
"    sweep round and trim from GET /v1/sweeps (each counted once, by seq).\n"
"    At the end it stops the nodes (SIGTERM, then SIGKILL after 15 s),\n"
"    removes the stores (unless --keep) and prints, per variant: the plateau\n"
"    mean RSS (the samples after --warmup), the reduction against the\n"
"    baseline (notrim), trims/sweeps, the share of trims that lowered RSS,\n"
"    the median and largest release, the median and p95 trim duration, minor\n"
"    faults per trim, and the median bytes a sweep freed. With --repeat N\n"
"    every variant runs N times, all variants of a repetition at once,\n"
"    repetition after repetition; each variant's first line then gives the\n"
"    medians over the repetitions and the following lines each repetition.\n"
"\n"
"VARIANTS\n"
"    trim       --trim-policy always (the node's default)\n"
"    notrim     --trim-policy never\n"
"    every2     --trim-policy every:2\n"
"    every4     --trim-policy every:4\n"
"    freed8m    --trim-policy freed:8MiB\n"
"    freed64m   --trim-policy freed:64MiB\n"
"    freepct10  --trim-policy free-pct:10\n"
"    mmap16k    --mmap-threshold 16KiB --trim-policy never\n"
"    jemalloc   LD_PRELOAD=libjemalloc.so.2 MALLOC_CONF=background_thread:true,\n"
"               the node's default policy\n"
"    --custom NAME=FLAGS defines another: FLAGS are tided flags, and words of\n"
"    the form VAR=VALUE go to its environment, e.g.\n"
"    --custom 'arena2=--arena-max 2 --trim-policy never'. A custom variant\n"
"    runs whether or not --variant names it.\n"
"\n"
"OPTIONS\n"
"    --variant LIST      the variants, comma-separated. Default trim,notrim.\n"
"    --custom NAME=FLAGS define and add a variant (repeatable).\n"
"    --duration S        seconds of workload per repetition. Default 300.\n"
"                        0 with --ledgers: as long as the ledgers take.\n"
"    --ledgers N         stop after N ledgers (default 0: no limit).\n"
"    --ledger-interval S seconds between ledger starts. Default 1.\n"
"    --objects N         new objects per ledger. Default 2000.\n"
"    --reads N           reads per ledger. Default 1000.\n"
"    --inner-pct P       share of objects of about 525 bytes. Default 60.\n"
"    --recent-pct P      share of reads from the last two ledgers. Default 50.\n"
"    --wave N            ledgers per load cycle: ledger L writes objects x\n"
"                        (1 + P/100 x sin(2 pi L / N)) new objects. Default\n"
"                        120. 0: every ledger alike.\n"
"    --wave-pct P        the cycle's amplitude in per cent. Default 75.\n"
"    --clients N         client threads, 1 to 64. Default 4.\n"
"    --seed N            the workload's seed. Default 1.\n"
"    --warmup S          seconds left out of the plateau. Default 20% of\n"
"                        the run.\n"
"    --repeat N          repetitions, 1 to 100. Default 1.\n"
"    --sweep-interval S  the nodes' sweep interval, 10 to 600. Default 10.\n"
"    --node-size SIZE    the nodes' preset (tiny, small, medium, large,\n"
"                        huge). Default tiny.\n"
"    --node-args FLAGS   more tided flags for every node, blank-separated,\n"
"                        e.g. '--cache-age 20 --http-threads 2'.\n"
"    --baseline NAME     the variant reductions are measured against.\n"
"                        Default notrim (none when it is not run).\n"
"    --tided PATH        the tided to run. Default: tided next to this tide.\n"
"    --jemalloc PATH     the jemalloc to preload. Default\n"
"                        /usr/lib/x86_64-linux-gnu/libjemalloc.so.2.\n"
"    --port P            use ports P, P+1, ... (default: free ports the\n"
"                        kernel picks). A busy port is an error.\n"
"    --out DIR           where the files go (created). Default lab-out.\n"
"    --prefix NAME       the files' prefix. Default lab.\n"
"    --scratch DIR       where the stores and logs go. Default a new\n"
"                        $TMPDIR/tide-lab-XXXXXX, removed at the end.\n"
"    --keep              keep the stores and node logs.\n"
"    --referenced        also sample smaps_rollup's Referenced (the bits are\n"
"                        cleared every 10 s, so it counts pages touched in\n"
"                        the last 10 s or less).\n"
"    --json              print the summary as one JSON object.\n"
"    -h, --help          print this text\n"
"\n"
"FILES\n"
"    DIR/NAME-rss.csv      rep,variant,port,t_s,rss_bytes,referenced_bytes\n"
"    DIR/NAME-sweeps.csv   rep,variant,seq,t_s,sweep_ms,freed_bytes,trimmed,\n"
"                          trim_rc,rss_before,rss_after,rss_delta,\n"
"                          duration_ms,minflt,majflt (every sweep round)\n"
"    DIR/NAME-rss.svg      RSS over time, one line per variant and\n"
"                          repetition, trims as ticks, plateau means dotted\n"
"    DIR/NAME-summary.json the --json document\n"
"    The JSON has command, machine, settings, baseline, files, interrupted\n"
"    and variants: [{name, spec, samples, trims,\n"
"    plateau_mean_rss_median_bytes, reduction_pct_median, repetitions:\n"
"    [{rep, port, samples, plateau_mean_rss_bytes, reduction_pct, sweeps,\n"
"    trims, trims_lowered_pct, release_median_bytes, trim_median_ms,\n"
"    trim_p95_ms, minflt_per_trim, ...}]}]. Figures without data are null.\n"
"\n"
"EXIT STATUS\n"
"    0 measured; 1 tided is missing, a port is busy, a node failed to start\n"
"    or died (its log's last lines are printed and the scratch directory is\n"
"    kept), or the run was interrupted (SIGINT, SIGTERM: the nodes are\n"
"    stopped and what was measured is written); 2 usage error.\n"
"\n"
"EXAMPLES\n"
"    tide lab --duration 600\n"
"    tide lab --variant trim,notrim,every4,freed64m,freepct10 --repeat 3 \\\n"
"             --duration 240\n"
"    tide lab --duration 25 --objects 200 --reads 100 --json | jq .variants\n"
"    tide lab --variant trim,notrim,jemalloc --out /tmp/lab --keep\n";

static const char help_help[] =
"NAME\n"
"    tide help - print help\n"
"\n"
"SYNOPSIS\n"
"    tide help [VERB]\n"
"\n"
"DESCRIPTION\n"
"    Without VERB, prints the overview of tide. With VERB (create, info,\n"
"    put, get, visit, verify, recover, rekey, bench, doctor, ghost, lab),\n"
"    prints that verb's manual, the same text as 'tide VERB --help'.\n"
"\n"
"EXIT STATUS\n"
"    0 printed; 2 unknown verb.\n";

/* ---- the verb table ---- */

typedef struct verb {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
} verb;

static int cmd_help(int argc, char **argv);

static const verb verbs[] = {
    { "create", cli_cmd_create, help_create },
    { "info",   cli_cmd_info,   help_info },
    { "put",    cli_cmd_put,    help_put },
    { "get",    cli_cmd_get,    help_get },
    { "visit",  cli_cmd_visit,  help_visit },
    { "verify", cli_cmd_verify, help_verify },
    { "recover", cli_cmd_recover, help_recover },
    { "rekey",  cli_cmd_rekey,  help_rekey },
    { "bench",  cli_cmd_bench,  help_bench },
    { "doctor", cli_cmd_doctor, help_doctor },
    { "ghost",  cli_cmd_ghost,  help_ghost },
    { "lab",    cli_cmd_lab,    help_lab },
    { "help",   cmd_help,       help_help },
};

static const verb *find_verb(const char *name)
{
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (strcmp(verbs[i].name, name) == 0) return &verbs[i];
    return NULL;
}

int cli_help(const char *name, FILE *f)
{
    const verb *v = find_verb(name);
    if (v == NULL) return -1;
    fputs(v->help, f);
    return 0;
}

static int cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        fputs(help_main, stdout);
        return CLI_OK;
    }
    if (argc > 2) return cli_usage("help", "one verb at a time (got %d)", argc - 1);
    if (strcmp(argv[1], "store") == 0) return cli_help("bench", stdout), CLI_OK;
    if (cli_help(argv[1], stdout) != 0)
        return cli_usage("help", "'%s' is not a verb", argv[1]);
    return CLI_OK;
}

/* ---- shared helpers ---- */

int cli_fail(const char *verb, int rc)
{
    const char *detail = tide_last_error();
    if (detail && *detail)
        fprintf(stderr, "tide %s: %s: %s\n", verb, tide_strerror(rc), detail);
    else
        fprintf(stderr, "tide %s: %s\n", verb, tide_strerror(rc));
    return (rc == TIDE_EINVAL || rc == TIDE_EKEYSIZE) ? CLI_USAGE : CLI_FAIL;
}

int cli_usage(const char *verb, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "tide %s: ", verb);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'tide help %s'.\n", verb);
    return CLI_USAGE;
}

int cli_error(const char *verb, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "tide %s: ", verb);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_FAIL;
}

int cli_parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
    const char *digits;
    char *end;
    unsigned long long v;
    int base = 10;

    if (text == NULL) return -1;
    while (*text == ' ' || *text == '\t') text++;
    digits = text;
    /* Decimal, or hex after 0x; never octal (a leading 0 is just a 0). */
    if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        digits = text + 2;
        base = 16;
    }
    if (!isxdigit((unsigned char)*digits) || (base == 10 && !isdigit((unsigned char)*digits)))
        return -1;                          /* no sign, no empty */
    errno = 0;
    v = strtoull(digits, &end, base);
    if (errno || end == digits) return -1;
    while (*end == ' ' || *end == '\t') end++;
    if (*end != '\0') return -1;
    if (v < min || v > max) return -1;
    *out = v;
    return 0;
}

int cli_parse_double(const char *text, double *out)
{
    char *end;
    double v;

    if (text == NULL || *text == '\0') return -1;
    errno = 0;
    v = strtod(text, &end);
    if (errno || end == text || *end != '\0' || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

int cli_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

void cli_getopt_reset(void)
{
    optind = 0;     /* glibc: 0 re-initialises the parser completely */
    opterr = 0;     /* verbs print their own messages */
}

int cli_option_error(const char *verb, int c, char **argv)
{
    const char *arg = argv[optind - 1];

    if (c == ':') {
        if (optopt && strncmp(arg, "--", 2) != 0)
            return cli_usage(verb, "option '-%c' needs a value", optopt);
        return cli_usage(verb, "option '%s' needs a value", arg);
    }
    if (optopt && strncmp(arg, "--", 2) != 0)
        return cli_usage(verb, "unknown option '-%c'", optopt);
    return cli_usage(verb, "unknown option '%s'", arg);
}

int cli_check_store_dir(const char *verb, const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            return cli_error(verb, "%s: no such directory", path);
        return cli_error(verb, "%s: %s", path, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return cli_error(verb, "%s: not a directory (give the store's directory, "
                               "the one that holds nudb.dat and nudb.key)", path);
    return CLI_OK;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "help",      no_argument,       NULL, 'h' },
        { "version",   no_argument,       NULL, 'V' },
        { "log-level", required_argument, NULL, 'l' },
        { NULL, 0, NULL, 0 },
    };
    const char *env = getenv("TIDE_LOG_LEVEL");
    const verb *v;
    int c, level = TIDE_LOG_WARN;

    if (env && *env) {
        int l = tide_log_level_parse(env);
        if (l < 0) {
            fprintf(stderr, "tide: TIDE_LOG_LEVEL='%s' is not debug, info, warn, error or off; "
                            "using warn\n", env);
        } else {
            level = l;
        }
    }
    /* '+': stop at the verb, whose options are its own. */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            fputs(help_main, stdout);
            return CLI_OK;
        case 'V':
            printf("tide %s (NuDB format version 2; block sizes %u to %u)\n",
                   TIDE_VERSION, TIDE_BLOCK_SIZE_MIN, TIDE_BLOCK_SIZE_MAX);
            return CLI_OK;
        case 'l':
            level = tide_log_level_parse(optarg);
            if (level < 0) {
                fprintf(stderr, "tide: --log-level '%s' is not debug, info, warn, error or off\n"
                                "Try 'tide --help'.\n", optarg);
                return CLI_USAGE;
            }
            break;
        default:
            if (optopt)
                fprintf(stderr, "tide: unknown option '-%c'\nTry 'tide --help'.\n", optopt);
            else
                fprintf(stderr, "tide: unknown option '%s'\nTry 'tide --help'.\n", argv[optind - 1]);
            return CLI_USAGE;
        }
    }
    tide_log_set_level(level);
    if (optind >= argc) {
        fprintf(stderr, "tide: no verb given\n"
                        "Usage: tide VERB [OPTIONS] ARGS   (verbs: create info put get visit verify "
                        "recover rekey bench doctor ghost lab help)\n"
                        "Try 'tide --help'.\n");
        return CLI_USAGE;
    }
    v = find_verb(argv[optind]);
    if (v == NULL) {
        fprintf(stderr, "tide: '%s' is not a verb (create, info, put, get, visit, verify, recover, "
                        "rekey, bench, doctor, ghost, lab, help)\n"
                        "Try 'tide --help'.\n", argv[optind]);
        return CLI_USAGE;
    }
    return v->fn(argc - optind, argv + optind);
}
