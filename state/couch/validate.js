function (newDoc, oldDoc, userCtx, secObj) {
  // aso: reject malformed transfer and lock documents and illegal state
  // transitions. Accepts the transfers state.Transfer.Validate accepts, and
  // only those but for the ID hash, which the agent checks at claim time
  // (TestValidate_AgreesWithGo runs one corpus through both); enforces
  // state.CanTransition.
  //
  // Cost: a new transfer (aso's enqueue or another producer's write) gets
  // every check. An update of a stored transfer whose request fields are
  // unchanged skips what depends on them alone (names, LFNs, dependencies)
  // and the times and history entries it carries over unchanged: aso's own
  // writes, several per transfer, check only what they change.
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
  // a time carried over unchanged from the stored revision was checked
  // when it was written
  function time(f) {
    if (!(wasTransfer && newDoc[f] === oldDoc[f]) && !isTime(newDoc[f])) fail(f + ' must be an RFC 3339 timestamp');
  }
  function isObject(v) {
    return typeof v === 'object' && v !== null && !Array.isArray(v);
  }
  // absent, null and "" are one value to aso, which writes none of them
  function none(v) {
    return v === undefined || v === null || v === '';
  }
  function same(f) {
    var a = newDoc[f], b = oldDoc[f];
    return a === b || none(a) && none(b) || typeof a === 'object' && JSON.stringify(a) === JSON.stringify(b);
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
  var unchanged = wasTransfer;
  for (var ri = 0; unchanged && ri < request.length; ri++) {
    unchanged = same(request[ri]);
  }

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
  str('owner', false);
  str('submit_sid', false);
  str('fts_job', false);
  str('source_pfn', false);
  str('dest_pfn', false);
  str('reason', false);
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
    // entries carried over from the stored revision were checked when they
    // were written: only those after the stored last entry are checked (only
    // aso rewrites history; an entry changed in place would make the agent's
    // own validation refuse the document, which Summary then lists)
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
  for (var fi = 0; !unchanged && fi < request.length; fi++) {
    var rf = request[fi];
    if (rf !== 'group' && rf !== 'role' && newDoc[rf] !== oldDoc[rf]) fail(rf + ' must not change');
  }
  var terminal = function (s) { return s === 'done' || s === 'failed' || s === 'killed'; };
  var ok;
  var h0 = newDoc.history || [];
  var l0 = h0.length > 0 ? h0[h0.length - 1] : null;
  if (l0 !== null && l0.from === to && l0.to === to && typeof l0.reason === 'string' && l0.reason.indexOf('conflict resolved:') === 0) {
    // The resolution of a conflict keeps one leaf revision (the server
    // may weigh it against another leaf).
    ok = true;
  } else if (terminal(from)) {
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

  // The request fields, as state.Request.Validate checks them, and the
  // form of the ID. That the ID is the hex SHA-256 of user, source,
  // source_lfn, destination and destination_lfn (state.TransferID) is
  // checked by the agent when it claims the transfer (a document whose ID
  // is not moves to failed, its reason naming _id): computed here, the hash
  // made a new document's validation several times dearer on CouchDB's
  // JavaScript engine.
  function checkRequest() {
    if (!/^[0-9a-f]{64}$/.test(id)) fail('_id must be the transfer ID: 64 lowercase hexadecimal digits (state.TransferID)');
    ['user', 'source', 'destination'].forEach(function (f) { str(f, true); name(f); });
    ['group', 'role'].forEach(function (f) { str(f, false); name(f); });
    ['source_lfn', 'destination_lfn'].forEach(function (f) { str(f, true); lfn(f); });
    if (newDoc.source === newDoc.destination && newDoc.source_lfn === newDoc.destination_lfn) {
      fail('destination_lfn: the same file as the source (same site and LFN): a transfer onto itself, whose failed attempt would delete its source');
    }
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
    if (v.length > 1365 && utf8len(v) > 4096) fail(f + ' is longer than 4096 bytes');
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
  // the length of s in UTF-8 bytes (a lone surrogate as U+FFFD, 3 bytes,
  // as Go decodes it)
  function utf8len(s) {
    var n = 0;
    for (var i = 0; i < s.length; i++) {
      var c = s.charCodeAt(i);
      if (c < 0x80) {
        n += 1;
      } else if (c < 0x800) {
        n += 2;
      } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
        n += 4;
        i++;
      } else {
        n += 3;
      }
    }
    return n;
  }
}
