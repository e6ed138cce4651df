function (newDoc, oldDoc, userCtx, secObj) {
  // aso: reject malformed transfer and lock documents and illegal state
  // transitions. Accepts exactly the transfers state.Transfer.Validate
  // accepts (TestValidate_AgreesWithGo runs one corpus through both) and
  // enforces state.CanTransition.
  //
  // Cost: a new transfer (aso's enqueue or another producer's write) gets
  // every check, its ID hash included. An update of a stored transfer whose
  // request fields are unchanged skips what depends on them alone (names,
  // LFNs, ID hash, dependencies): aso's own writes, several per transfer,
  // check only the fields they change.
  if (newDoc._deleted) {
    return;
  }
  var id = newDoc._id;
  if (id.indexOf('_design/') === 0) {
    return;
  }
  function fail(msg) {
    throw ({ forbidden: 'document ' + id + ': ' + msg });
  }
  function has(f) {
    return newDoc[f] !== undefined && newDoc[f] !== null;
  }
  function str(f, required) {
    var v = newDoc[f];
    if (v === undefined || v === null) {
      if (required) fail(f + ' is required');
      return;
    }
    if (typeof v !== 'string') fail(f + ' must be a string');
    if (required && v === '') fail(f + ' must not be empty');
  }
  // an integer that fits a signed 64-bit integer, as aso decodes it
  function isInt(v) {
    return typeof v === 'number' && Math.floor(v) === v && Math.abs(v) <= 9223372036854775807;
  }
  function integer(f, min, max) {
    if (!has(f)) return;
    var v = newDoc[f];
    if (!isInt(v)) fail(f + ' must be an integer');
    if (min !== undefined && v < min) fail(f + ' must be >= ' + min);
    if (max !== undefined && v > max) fail(f + ' must be <= ' + max);
  }
  function opt(v, type) {
    return v === undefined || v === null || typeof v === type;
  }
  // a timestamp as state.Time reads it: RFC 3339 (as Go's time.Parse takes
  // it), or null/"" for none, in the years 0 to 9999 once in UTC
  var rfc3339 = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)([.,]\d+)?(Z|([+-])(\d\d):(\d\d))$/;
  var mdays = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  function isTime(v) {
    if (v === undefined || v === null || v === '') return true;
    var m = typeof v === 'string' && rfc3339.exec(v);
    if (!m) return false;
    var y = +m[1], mo = +m[2], d = +m[3], mins = +m[4] * 60 + +m[5];
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || +m[4] > 23 || +m[5] > 59 || +m[6] > 59) return false;
    if (mo === 2 && d === 29 && !(y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0))) return false;
    if (m[9]) {
      if (+m[10] > 24 || +m[11] > 60) return false;
      var off = +m[10] * 60 + +m[11];
      if (m[9] === '+' && y === 0 && mo === 1 && d === 1 && mins < off) return false;
      if (m[9] === '-' && y === 9999 && mo === 12 && d === 31 && mins + off >= 1440) return false;
    }
    return true;
  }
  function time(f) {
    if (!isTime(newDoc[f])) fail(f + ' must be an RFC 3339 timestamp');
  }
  function isObject(v) {
    return typeof v === 'object' && v !== null && !Array.isArray(v);
  }
  function same(f) {
    return JSON.stringify(newDoc[f]) === JSON.stringify(oldDoc[f]);
  }

  if (id.indexOf('lock:') === 0) {
    if (newDoc.type !== 'lock') fail('type must be "lock"');
    str('user', true);
    str('holder', true);
    str('expire', false);
    return;
  }
  var wasTransfer = oldDoc && !oldDoc._deleted && oldDoc.type === 'transfer';
  if (typeof newDoc.type !== 'string') fail('type is required: "transfer" for a transfer document');
  if (newDoc.type !== 'transfer' && !wasTransfer) {
    return; // another application's document
  }
  if (newDoc.type !== 'transfer') fail('type must be "transfer"');

  var request = ['user', 'group', 'role', 'source', 'destination', 'source_lfn', 'destination_lfn'];
  var from = wasTransfer ? oldDoc.state : undefined;
  var to = newDoc.state;
  var unchanged = wasTransfer && request.every(same);

  // The agent moves a queued document it cannot read to failed, keeping
  // every field as it is, with a reason that starts "invalid document: ".
  if (wasTransfer && unchanged && (from === 'new' || from === 'acquired') && to === 'failed' &&
      typeof newDoc.reason === 'string' && newDoc.reason.indexOf('invalid document: ') === 0) {
    return;
  }

  if (!unchanged) {
    checkRequest();
  }
  if (!wasTransfer || !same('depends_on')) {
    checkDependsOn();
  }
  integer('size', 0);
  integer('priority', -2147483648, 2147483647);
  integer('activity', 0, 63);
  if (has('checksums')) {
    if (!isObject(newDoc.checksums)) fail('checksums must be an object');
    var seen = {};
    Object.keys(newDoc.checksums).forEach(function (k) {
      var v = newDoc.checksums[k], lk = k.toLowerCase();
      if (typeof v !== 'string') fail('checksums.' + k + ' must be a string');
      if (seen[lk]) fail('checksums: algorithm ' + lk + ' given twice (keys differ only in case)');
      seen[lk] = true;
      if (lk !== 'adler32') fail('checksums: unknown algorithm ' + JSON.stringify(k) + ' (only adler32 is supported)');
      if (!/^[0-9a-fA-F]{8}$/.test(v)) fail('checksums.adler32 must be 8 hexadecimal digits');
    });
  }
  ['owner', 'submit_sid', 'fts_job', 'source_pfn', 'dest_pfn', 'reason'].forEach(function (f) { str(f, false); });
  integer('attempts', 0);
  integer('fts_file_id');
  time('created');
  time('last_update');
  time('lease_expires');
  time('retry_after');
  if (!newDoc.created) fail('created is required (an RFC 3339 timestamp)');
  if (!newDoc.last_update) fail('last_update is required (an RFC 3339 timestamp)');
  if (!opt(newDoc.kill_requested, 'boolean')) fail('kill_requested must be a boolean');
  if (has('history')) {
    if (!Array.isArray(newDoc.history)) fail('history must be a list');
    // entries carried over unchanged from the stored revision were checked
    // when they were written: only the new tail is checked
    var h = newDoc.history, oh = wasTransfer && Array.isArray(oldDoc.history) ? oldDoc.history : [];
    var k = 0;
    if (oh.length > 0 && h.length > 0) {
      var lastOld = JSON.stringify(oh[oh.length - 1]);
      for (k = h.length; k > 0 && JSON.stringify(h[k - 1]) !== lastOld; k--) {}
    }
    for (; k < h.length; k++) {
      var e = h[k];
      if (e === null) continue;
      if (!isObject(e)) fail('history entries must be objects');
      if (!isTime(e.at)) fail('history.at must be an RFC 3339 timestamp');
      if (!opt(e.from, 'string') || !opt(e.to, 'string') || !opt(e.by, 'string') || !opt(e.reason, 'string')) {
        fail('history.from, to, by and reason must be strings');
      }
    }
  }
  if (has('progress')) {
    var p = newDoc.progress;
    if (!isObject(p)) fail('progress must be an object');
    if (!isTime(p.updated)) fail('progress.updated must be an RFC 3339 timestamp');
    if (!opt(p.fts_state, 'string') || !opt(p.reason, 'string')) fail('progress.fts_state and reason must be strings');
    ['bytes', 'retries', 'file_id'].forEach(function (f) {
      if (p[f] !== undefined && p[f] !== null && !isInt(p[f])) fail('progress.' + f + ' must be an integer');
    });
    if (!opt(p.throughput, 'number')) fail('progress.throughput must be a number');
  }

  var states = ['new', 'acquired', 'submitted', 'done', 'failed', 'killed'];
  if (typeof to !== 'string' || states.indexOf(to) < 0) fail('unknown state ' + JSON.stringify(to));
  if (to === 'acquired' && (!newDoc.owner || !newDoc.lease_expires)) fail('an acquired transfer needs owner and lease_expires');
  if (to === 'submitted' && !newDoc.fts_job) fail('a submitted transfer needs fts_job');

  if (!wasTransfer) {
    return;
  }
  ['user', 'source', 'destination', 'source_lfn', 'destination_lfn'].forEach(function (f) {
    if (newDoc[f] !== oldDoc[f]) fail(f + ' must not change');
  });
  var terminal = function (s) { return s === 'done' || s === 'failed' || s === 'killed'; };
  var ok;
  if (terminal(from)) {
    // Only `aso retry` may revive a transfer: it records the move to new as
    // the last history entry, with the reason "retry requested".
    var hs = newDoc.history || [];
    var last = hs.length > 0 ? hs[hs.length - 1] : null;
    ok = to === 'new' && last !== null && last.from === from && last.to === 'new' && last.reason === 'retry requested';
  } else if (from === 'new') {
    ok = to === 'new' || to === 'acquired' || to === 'failed' || to === 'killed';
  } else if (from === 'acquired') {
    ok = to === 'acquired' || to === 'submitted' || to === 'new' || terminal(to);
  } else if (from === 'submitted') {
    ok = to === 'submitted' || to === 'new' || terminal(to);
  } else {
    ok = true; // an unknown stored state may be repaired
  }
  if (!ok) fail('illegal transition ' + from + ' -> ' + to);

  // The request fields, as state.Request.Validate checks them, and the ID:
  // the hex SHA-256 of user, source, source_lfn, destination and
  // destination_lfn, each followed by a zero byte (state.TransferID).
  function checkRequest() {
    ['user', 'source', 'destination'].forEach(function (f) { str(f, true); name(f); });
    ['group', 'role'].forEach(function (f) { str(f, false); name(f); });
    ['source_lfn', 'destination_lfn'].forEach(function (f) { str(f, true); lfn(f); });
    var want = sha256hex(utf8([newDoc.user, newDoc.source, newDoc.source_lfn, newDoc.destination, newDoc.destination_lfn].join('\u0000') + '\u0000'));
    if (id !== want) fail('_id does not match the hash of user, source, source_lfn, destination, destination_lfn (want ' + want + ')');
  }
  function name(f) {
    var v = newDoc[f];
    if (!v) return;
    if (v.length > 128) fail(f + ' is longer than 128 bytes');
    if (!/^[A-Za-z0-9._@+=:\/-]+$/.test(v)) fail(f + ' may contain only ASCII letters, digits and . _ - @ + = : /');
  }
  function lfn(f) {
    var v = newDoc[f];
    if (v.charAt(0) !== '/') fail(f + ' must be an absolute path starting with /');
    if (v.length > 1365 && utf8(v).length > 4096) fail(f + ' is longer than 4096 bytes');
    if (/[\u0000-\u001f\u007f-\u009f]/.test(v)) fail(f + ' contains a control character');
    if (/(^|\/)\.\.?(\/|$)/.test(v)) fail(f + ' must not contain . or .. path elements');
    if (v.indexOf('//') >= 0) fail(f + ' must not contain empty path elements (//)');
    if (/[?#%]/.test(v)) fail(f + ' must not contain ?, # or %: in a PFN they start a URL query, fragment or escape');
  }
  function checkDependsOn() {
    if (!has('depends_on')) return;
    var d = newDoc.depends_on;
    if (!Array.isArray(d)) fail('depends_on must be a list of transfer IDs');
    if (d.length > 1000) fail('depends_on: too many dependencies');
    d.forEach(function (x) {
      if (typeof x !== 'string' || !/^[0-9a-f]{64}$/.test(x)) fail('depends_on: not a transfer ID (64 lowercase hexadecimal digits)');
      if (x === id) fail('depends_on: a transfer cannot depend on itself');
    });
  }
  // the UTF-8 bytes of s (a lone surrogate as U+FFFD, as Go decodes it)
  function utf8(s) {
    var b = [];
    for (var i = 0; i < s.length; i++) {
      var c = s.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
        c = 0x10000 + ((c - 0xd800) << 10) + (s.charCodeAt(++i) - 0xdc00);
      } else if (c >= 0xd800 && c <= 0xdfff) {
        c = 0xfffd;
      }
      if (c < 0x80) {
        b.push(c);
      } else if (c < 0x800) {
        b.push(0xc0 | c >> 6, 0x80 | c & 63);
      } else if (c < 0x10000) {
        b.push(0xe0 | c >> 12, 0x80 | c >> 6 & 63, 0x80 | c & 63);
      } else {
        b.push(0xf0 | c >> 18, 0x80 | c >> 12 & 63, 0x80 | c >> 6 & 63, 0x80 | c & 63);
      }
    }
    return b;
  }
  function sha256hex(b) {
    var K = [0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
      0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
      0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
      0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
      0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
      0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
      0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2];
    var H = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
    var n = b.length, bits = n * 8;
    b.push(0x80);
    while (b.length % 64 !== 56) b.push(0);
    var hi = Math.floor(bits / 4294967296), lo = bits >>> 0;
    b.push(hi >>> 24, hi >>> 16 & 255, hi >>> 8 & 255, hi & 255, lo >>> 24, lo >>> 16 & 255, lo >>> 8 & 255, lo & 255);
    var w = [];
    for (var i = 0; i < b.length; i += 64) {
      var t;
      for (t = 0; t < 16; t++) w[t] = b[i + 4 * t] << 24 | b[i + 4 * t + 1] << 16 | b[i + 4 * t + 2] << 8 | b[i + 4 * t + 3];
      for (t = 16; t < 64; t++) {
        var x = w[t - 15], y = w[t - 2];
        var s0 = (x >>> 7 | x << 25) ^ (x >>> 18 | x << 14) ^ x >>> 3;
        var s1 = (y >>> 17 | y << 15) ^ (y >>> 19 | y << 13) ^ y >>> 10;
        w[t] = w[t - 16] + s0 + w[t - 7] + s1 | 0;
      }
      var a = H[0], c1 = H[1], c2 = H[2], d = H[3], e = H[4], f = H[5], g = H[6], hh = H[7];
      for (t = 0; t < 64; t++) {
        var S1 = (e >>> 6 | e << 26) ^ (e >>> 11 | e << 21) ^ (e >>> 25 | e << 7);
        var t1 = hh + S1 + (e & f ^ ~e & g) + K[t] + w[t] | 0;
        var S0 = (a >>> 2 | a << 30) ^ (a >>> 13 | a << 19) ^ (a >>> 22 | a << 10);
        var t2 = S0 + (a & c1 ^ a & c2 ^ c1 & c2) | 0;
        hh = g; g = f; f = e; e = d + t1 | 0; d = c2; c2 = c1; c1 = a; a = t1 + t2 | 0;
      }
      H[0] = H[0] + a | 0; H[1] = H[1] + c1 | 0; H[2] = H[2] + c2 | 0; H[3] = H[3] + d | 0;
      H[4] = H[4] + e | 0; H[5] = H[5] + f | 0; H[6] = H[6] + g | 0; H[7] = H[7] + hh | 0;
    }
    return H.map(function (v) { return ('0000000' + (v >>> 0).toString(16)).slice(-8); }).join('');
  }
}
