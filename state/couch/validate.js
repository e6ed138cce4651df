function (newDoc, oldDoc, userCtx, secObj) {
  // aso: reject malformed transfer and lock documents, illegal state
  // transitions, and writes the writer's role does not allow.
  //
  // Form. Accepts the transfers state.Transfer.Validate accepts, and only
  // those but for the ID hash, which the agent checks at claim time
  // (TestValidate_AgreesWithGo runs one corpus through both); enforces
  // the transitions of docs/design.md section 3. A new transfer whose
  // source and destination are the same file (site and LFN) is refused:
  // its copy would overwrite, and a failed copy's clean-up delete, its own
  // source.
  //
  // Roles (userCtx.roles; a refusal is a 403 naming the rule and the role):
  //   - _admin, and the database's admins (secObj.admins): everything;
  //   - aso-producer: creates transfers in state new, for any user, with
  //     none of the agent's fields; requests kills;
  //   - aso-user: the same for the transfers whose user is its name only,
  //     and retries them;
  //   - aso-agent: moves transfers as the state rules allow and writes the
  //     agent's fields, and takes, renews and releases run locks (never
  //     one another holder holds live); it creates no transfer, deletes
  //     nothing, never retries and never withdraws the kill request of an
  //     unfinished transfer;
  //   - aso-operator: kills, retries, resolves conflicts, deletes (aso
  //     purge, aso resolve-conflicts) and writes run locks (aso unlock);
  //   - aso-agent and aso-operator record verifications (aso verify) in
  //     the history of ended transfers;
  //   - aso-producer and aso-user, enqueueing a transfer that replaces or
  //     supersedes an ended one as the owner of its destination, record
  //     that on it: superseded_by, once, and one history entry naming it
  //     (state.SupersedeOf), and nothing else;
  //   - aso-reader, and members without an aso role: write no transfer and
  //     no lock (members without an aso role may write other documents).
  // No one changes a transfer's request (user, group, role, sites, LFNs,
  // size, checksums, priority, dependencies, activity). Design documents
  // are the database admins' (CouchDB itself refuses the others; this
  // function does not run for them).
  //
  // Cost: a new transfer (aso's enqueue or another producer's write) gets
  // every check. An update of a stored transfer whose request fields are
  // unchanged skips what depends on them alone (names, LFNs, dependencies)
  // and the times and history entries it carries over unchanged: aso's own
  // writes, several per transfer, check only what they change.
  var id = newDoc._id;
  if (id.indexOf('_design/') === 0) {
    return;
  }
  var PRODUCER = 'aso-producer', USER = 'aso-user', AGENT = 'aso-agent', OPERATOR = 'aso-operator', READER = 'aso-reader';
  var roles = userCtx && Array.isArray(userCtx.roles) ? userCtx.roles : [];
  // The fields only the agent writes (and kill and retry, as they say).
  var agentFields = ['state', 'owner', 'lease_expires', 'submit_sid', 'fts_job', 'fts_file_id', 'source_pfn', 'dest_pfn',
    'attempts', 'retry_after', 'reason', 'error_class', 'progress', 'fts_endpoint', 'kill_requested', 'superseded_revs',
    'dest_owned_since', 'dest_written', 'superseded_by'];
  // The request: no role changes it once stored.
  var identity = ['user', 'group', 'role', 'source', 'destination', 'source_lfn', 'destination_lfn', 'size', 'checksums',
    'priority', 'depends_on', 'activity'];
  // times aso writes again in UTC
  var times = ['created', 'last_update', 'lease_expires', 'retry_after'];
  // state.UserRule, word for word (a test holds them together)
  var userRule = 'lowercase letters, digits, _ and -, starting with a letter or a digit, at most 128 bytes (a CMS user name)';
  function terminalState(st) {
    return st === 'done' || st === 'failed' || st === 'killed';
  }
  function hasRole(r) {
    return roles.indexOf(r) >= 0;
  }
  function inSection(section) {
    var sec = section || {};
    return (Array.isArray(sec.names) && userCtx && userCtx.name !== null && sec.names.indexOf(userCtx.name) >= 0) ||
      (Array.isArray(sec.roles) && roles.some(function (r) { return sec.roles.indexOf(r) >= 0; }));
  }
  var admin = hasRole('_admin') || inSection((secObj || {}).admins);
  var asoRoles = [PRODUCER, USER, AGENT, OPERATOR, READER].filter(hasRole);
  function who() {
    var name = userCtx && userCtx.name !== null ? 'user ' + JSON.stringify(userCtx.name) : 'an anonymous user';
    return name + ' (' + (asoRoles.length > 0 ? asoRoles.join(', ') : 'no aso role') + ')';
  }
  // deny refuses the write by rule, saying what the writer may not do.
  function deny(rule, what) {
    if (!admin && userCtx && userCtx.name === null && roles.length === 0) {
      throw ({ unauthorized: 'document ' + id + ': rule "' + rule + '": log in to ' + what });
    }
    throw ({ forbidden: 'document ' + id + ': rule "' + rule + '": ' + who() + ' may not ' + what });
  }
  function isAsoDoc(d) {
    return d && !d._deleted && (d.type === 'transfer' || d.type === 'lock');
  }
  if (newDoc._deleted) {
    if (admin || hasRole(OPERATOR) || (asoRoles.length === 0 && !isAsoDoc(oldDoc) && id.indexOf('lock:') !== 0)) {
      return;
    }
    deny('delete', 'delete documents: only aso-operator does (aso purge, aso resolve-conflicts)');
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
    if (!admin && !hasRole(AGENT) && !hasRole(OPERATOR)) deny('locks', 'write run locks: only aso-agent and aso-operator do');
    if (newDoc.type !== 'lock') fail('type must be "lock"');
    str('user', true);
    str('holder', true);
    str('expire', false);
    if (!admin && !hasRole(OPERATOR)) checkTakeover();
    return;
  }
  var wasTransfer = oldDoc && !oldDoc._deleted && oldDoc.type === 'transfer';
  if (typeof newDoc.type !== 'string') fail('type is required: "transfer" for a transfer document');
  if (newDoc.type !== 'transfer' && !wasTransfer) {
    // another application's document: aso's roles do not write those
    if (!admin && asoRoles.length > 0) deny('other-documents', 'write documents other than transfers and run locks');
    return;
  }
  if (newDoc.type !== 'transfer') fail('type must be "transfer"');
  if (!admin && (asoRoles.length === 0 || (asoRoles.length === 1 && hasRole(READER)))) {
    deny('roles', 'write transfers: that takes aso-producer, aso-user, aso-agent or aso-operator');
  }

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
    if (!admin && !hasRole(AGENT)) deny('agent-fields', 'move a transfer to failed: only aso-agent does');
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

  if (!admin) {
    checkRoles();
  }
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
  } else if (terminal(from) && to === from && isVerification()) {
    // aso verify records what it found at the destination of an ended
    // transfer (state.VerifyOf)
    ok = true;
  } else if (terminal(from) && to === from && isSupersession()) {
    // an enqueue records on an ended owner the transfer that replaces or
    // supersedes it (state.SupersedeOf)
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
    str('user', true);
    if (newDoc.user.length > 128 || !/^[a-z0-9][a-z0-9_-]*$/.test(newDoc.user)) fail('user is not a user name: want ' + userRule);
    ['source', 'destination'].forEach(function (f) { str(f, true); name(f); });
    ['group', 'role'].forEach(function (f) { str(f, false); name(f); });
    ['source_lfn', 'destination_lfn'].forEach(function (f) { str(f, true); lfn(f); });
    if (newDoc.source === newDoc.destination && newDoc.source_lfn === newDoc.destination_lfn) {
      deny('same-file', 'write a transfer onto its own source (destination_lfn the same file as the source: same site and LFN), ' +
        'whose failed attempt would delete its source');
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
  // checkTakeover refuses the take-over of a run lock another holder holds
  // by the server's clock (with 30 s for the clocks' skew: an agent stops
  // writing a tenth of its lock's TTL before it expires by its own clock).
  function checkTakeover() {
    if (!oldDoc || oldDoc._deleted || !oldDoc.holder || newDoc.holder === oldDoc.holder) return;
    var until = epochMs(oldDoc.expire);
    if (until !== null && until > new Date().getTime() + 30000) {
      deny('lock-takeover', 'take the run lock of ' + oldDoc.user + ' held by ' + JSON.stringify(oldDoc.holder) + ' until ' + oldDoc.expire);
    }
  }
  // epochMs is an RFC 3339 time in milliseconds since 1970, or null.
  function epochMs(v) {
    var m = typeof v === 'string' && rfc3339.exec(v);
    if (!m) return null;
    var t = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
    if (m[9]) t -= (m[9] === '+' ? 1 : -1) * (+m[10] * 60 + +m[11]) * 60000;
    return t;
  }

  // blank: a value aso writes as none (absent, null, "", 0, false, [], {}).
  function blank(v) {
    return none(v) || v === 0 || v === false || (Array.isArray(v) && v.length === 0) ||
      (isObject(v) && Object.keys(v).length === 0);
  }
  // canonical checksums: keys and values in lower case, keys sorted
  function canon(f, v) {
    if (f !== 'checksums' || !isObject(v)) return JSON.stringify(v);
    return JSON.stringify(Object.keys(v).map(function (k) { return k.toLowerCase() + '=' + String(v[k]).toLowerCase(); }).sort());
  }
  // sameValue: f is the same in both, a time the same instant (aso writes
  // times in UTC, a producer may not)
  function sameValue(f) {
    var a = newDoc[f], b = oldDoc[f];
    if (a === b || (blank(a) && blank(b)) || canon(f, a) === canon(f, b)) return true;
    return times.indexOf(f) >= 0 && epochMs(a) !== null && epochMs(a) === epochMs(b) && fraction(a) === fraction(b);
  }
  // fraction: the digits of a time's fraction of a second, without
  // trailing zeros
  function fraction(v) {
    var m = rfc3339.exec(v);
    return m && m[7] ? m[7].slice(1).replace(/0+$/, '') : '';
  }
  // changedFields lists the fields (not CouchDB's own) an update changes.
  function changedFields() {
    var out = [], seen = {};
    [newDoc, oldDoc].forEach(function (d) {
      Object.keys(d).forEach(function (k) {
        if (seen[k] || k.charAt(0) === '_') return;
        seen[k] = true;
        if (!sameValue(k)) out.push(k);
      });
    });
    return out;
  }
  function lastEntry() {
    var h = newDoc.history;
    return Array.isArray(h) && h.length > 0 ? h[h.length - 1] : null;
  }
  // appendsHistory: the stored history's last entry is still there (as aso
  // writes it again: times in UTC, "from" of the creation "")
  function appendsHistory() {
    var oh = Array.isArray(oldDoc.history) ? oldDoc.history : [];
    if (oh.length === 0) return true;
    var last = oh[oh.length - 1];
    return Array.isArray(newDoc.history) && newDoc.history.some(function (e) { return sameEntry(e, last); });
  }
  function sameEntry(a, b) {
    if (!isObject(a) || !isObject(b)) return a === b;
    var at = a.at === b.at || (epochMs(a.at) !== null && epochMs(a.at) === epochMs(b.at) && fraction(a.at) === fraction(b.at));
    return at && ['from', 'to', 'by', 'reason'].every(function (f) { return a[f] === b[f] || (none(a[f]) && none(b[f])); });
  }
  function only(changed, allowed) {
    return changed.every(function (f) { return allowed.indexOf(f) >= 0; });
  }
  // isKill: aso kill's write (state.RequestKillOf): kill_requested set, and
  // a new transfer killed at once.
  function isKill(changed) {
    var allowed = ['kill_requested', 'last_update', 'history'];
    if (from === 'new' && to === 'killed') {
      allowed = allowed.concat(['state', 'reason', 'error_class']);
    } else if (from !== to || terminalState(from)) {
      return false;
    }
    return newDoc.kill_requested === true && only(changed, allowed) && appendsHistory();
  }
  // isRetry: aso retry's write (state.RetryOf): a terminal transfer back to
  // new, recorded, clearing what the agent wrote and setting nothing.
  function isRetry(changed) {
    var l = lastEntry();
    if (!terminalState(from) || to !== 'new' || l === null || l.from !== from || l.to !== 'new' || l.reason !== 'retry requested') {
      return false;
    }
    return appendsHistory() && changed.every(function (f) {
      return f === 'state' || f === 'history' || f === 'last_update' || (agentFields.indexOf(f) >= 0 && blank(newDoc[f]));
    });
  }
  // isResolution: a conflict's resolution, as the agent and aso
  // resolve-conflicts write it.
  function isResolution() {
    var l = lastEntry();
    return l !== null && l.from === to && l.to === to && typeof l.reason === 'string' && l.reason.indexOf('conflict resolved:') === 0;
  }
  // isVerification: aso verify's write (state.VerifyOf): the history of an
  // ended transfer, and nothing else, changes: the previous
  // verification's entry goes, one verification entry of the transfer's
  // state comes last, and every other entry stays (the second one may go
  // when the history is at its cap, as state.MaxHistory drops it).
  function isVerification() {
    var results = ['present', 'missing', 'differs', 'unreadable'];
    var l = lastEntry();
    if (!terminalState(from) || to !== from || l === null || !isObject(l) || results.indexOf(l.verified) < 0 ||
        l.from !== to || l.to !== to || typeof l.reason !== 'string' || l.reason.indexOf('verified: ') !== 0) {
      return false;
    }
    var changed = changedFields();
    if (changed.length !== 1 || changed[0] !== 'history') return false;
    var kept = (Array.isArray(oldDoc.history) ? oldDoc.history : []).filter(function (e) { return !(isObject(e) && e.verified); });
    var rest = newDoc.history.slice(0, -1);
    if (rest.some(function (e) { return isObject(e) && e.verified; })) return false;
    if (rest.length === kept.length - 1 && kept.length > 1) {
      kept = [kept[0]].concat(kept.slice(2));
    }
    return rest.length === kept.length && rest.every(function (e, i) { return sameEntry(e, kept[i]); });
  }
  // isSupersession: an enqueue's record on the ended transfer that a new
  // one replaces (done) or supersedes (failed, killed) as the owner of its
  // destination (state.SupersedeOf): superseded_by, unset before, names
  // another transfer ID; one history entry comes last, of the transfer's
  // state, saying so with that ID; every other entry stays (the second
  // may go when the history is at its cap). Nothing else changes, so a
  // transfer gets one such record per ending, and its state, request
  // and results stay as they are.
  function isSupersession() {
    if (!wasTransfer || !terminalState(from) || to !== from || !blank(oldDoc.superseded_by)) return false;
    var by = newDoc.superseded_by;
    if (typeof by !== 'string' || !/^[0-9a-f]{64}$/.test(by) || by === id) return false;
    if (!only(changedFields(), ['superseded_by', 'history'])) return false;
    var l = lastEntry();
    var prefix = from === 'done' ? 'replaced by transfer ' : 'superseded by transfer ';
    if (l === null || !isObject(l) || l.from !== from || l.to !== to || !none(l.verified) ||
        typeof l.reason !== 'string' || l.reason.indexOf(prefix + by + ' ') !== 0) {
      return false;
    }
    var kept = Array.isArray(oldDoc.history) ? oldDoc.history : [];
    var rest = newDoc.history.slice(0, -1);
    if (rest.length === kept.length - 1 && kept.length > 1) {
      kept = [kept[0]].concat(kept.slice(2));
    }
    return rest.length === kept.length && rest.every(function (e, i) { return sameEntry(e, kept[i]); });
  }
  // checkRoles refuses what the writer's roles do not allow (admins are
  // not checked).
  function checkRoles() {
    if (!wasTransfer) {
      checkCreate();
      return;
    }
    for (var i = 0; i < identity.length; i++) {
      if (!sameValue(identity[i])) deny('identity', 'change ' + identity[i] + ': a transfer\'s request never changes');
    }
    var changed = changedFields();
    var own = oldDoc.user === userCtx.name;
    var agentWhy = hasRole(AGENT) ? agentRefusal() : null;
    if ((hasRole(AGENT) || hasRole(OPERATOR)) && isVerification()) return;
    if ((hasRole(PRODUCER) || hasRole(USER)) && isSupersession()) return;
    if (hasRole(AGENT) && agentWhy === null) return;
    if (hasRole(OPERATOR) && (isKill(changed) || isRetry(changed) || isResolution())) return;
    if (hasRole(PRODUCER) && isKill(changed)) return;
    if (hasRole(USER) && own && (isKill(changed) || isRetry(changed))) return;
    if (agentWhy !== null) deny(agentWhy[0], agentWhy[1]);
    if (isVerification()) deny('verify', 'record a verification: only aso-agent and aso-operator do (aso verify)');
    if (hasRole(USER) && !own && !hasRole(PRODUCER) && !hasRole(OPERATOR)) {
      deny('own-transfers', 'change a transfer of user ' + JSON.stringify(oldDoc.user) + ': aso-user changes only its own');
    }
    var what = changed.filter(function (f) { return agentFields.indexOf(f) >= 0; });
    deny('agent-fields', 'change ' + (what.length > 0 ? what.join(', ') : changed.join(', ')) +
      ' this way: only aso-agent moves transfers; aso-producer, aso-operator and a transfer\'s aso-user request kills, ' +
      'aso-operator and a transfer\'s aso-user retry');
  }
  // agentRefusal: why an agent may not make this write ([rule, what]), or
  // null. Beyond the transition rules checked for every writer, an agent
  // never revives a terminal transfer (aso retry does), changes an ended
  // one but by the records the transition rules allow, nor withdraws the
  // kill request of one that goes on (a conflict's resolution may keep a
  // leaf that ended without it).
  function agentRefusal() {
    if (terminalState(from) && to === 'new' && !isResolution()) {
      return ['retry', 'revive a ' + from + ' transfer: only aso retry does (aso-operator, or the transfer\'s aso-user)'];
    }
    if (terminalState(from) && to === from && !isResolution() && !isVerification() && !isSupersession()) {
      return ['ended', 'change a ' + from + ' transfer: only its retry, a verification or the record of the transfer that supersedes it do'];
    }
    if (oldDoc.kill_requested === true && newDoc.kill_requested !== true && !terminalState(to)) {
      return ['kill', 'withdraw the kill request of an unfinished transfer'];
    }
    return null;
  }
  // checkCreate: a new transfer, by a producer or its user, starts new
  // with none of the agent's fields.
  function checkCreate() {
    if (!hasRole(PRODUCER) && !hasRole(USER)) {
      deny('create', 'create transfers: only aso-producer and aso-user do');
    }
    if (!hasRole(PRODUCER) && newDoc.user !== userCtx.name) {
      deny('own-transfers', 'create a transfer for user ' + JSON.stringify(newDoc.user) + ': aso-user creates only its own');
    }
    if (to !== 'new') deny('create', 'create a transfer in state ' + to + ': a transfer starts new');
    var set = agentFields.filter(function (f) { return f !== 'state' && !blank(newDoc[f]); });
    if (set.length > 0) deny('agent-fields', 'set ' + set.join(', ') + ' on a new transfer: only aso-agent writes it');
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
