function (newDoc, oldDoc, userCtx, secObj) {
  // aso: reject malformed transfer and lock documents and illegal state
  // transitions. Mirrors state.Transfer.Validate and state.CanTransition.
  if (newDoc._deleted) {
    return;
  }
  var id = newDoc._id;
  function fail(msg) {
    throw ({ forbidden: 'document ' + id + ': ' + msg });
  }
  function has(f) {
    return newDoc[f] !== undefined && newDoc[f] !== null;
  }
  function str(f, required) {
    if (!has(f)) {
      if (required) fail(f + ' is required');
      return;
    }
    if (typeof newDoc[f] !== 'string') fail(f + ' must be a string');
    if (required && newDoc[f] === '') fail(f + ' must not be empty');
  }
  function integer(f, required, min) {
    if (!has(f)) {
      if (required) fail(f + ' is required');
      return;
    }
    var v = newDoc[f];
    if (!isInt(v)) fail(f + ' must be an integer');
    if (min !== undefined && v < min) fail(f + ' must be >= ' + min);
  }

  // an integer that fits a signed 64-bit integer, as aso decodes it
  function isInt(v) {
    return typeof v === 'number' && Math.floor(v) === v && Math.abs(v) <= 9223372036854775807;
  }
  // a timestamp as state.Time reads it: RFC 3339, or null/"" for none
  var rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
  function isTime(v) {
    return v === undefined || v === null || v === '' || (typeof v === 'string' && rfc3339.test(v));
  }
  function isObject(v) {
    return typeof v === 'object' && v !== null && !Array.isArray(v);
  }

  if (id.indexOf('lock:') === 0) {
    if (newDoc.type !== 'lock') fail('type must be "lock"');
    str('user', true);
    str('holder', true);
    str('expire', false);
    return;
  }
  var wasTransfer = oldDoc && !oldDoc._deleted && oldDoc.type === 'transfer';
  if (newDoc.type !== 'transfer' && !wasTransfer) {
    return; // not ours
  }
  if (newDoc.type !== 'transfer') fail('type must be "transfer"');

  var required = ['user', 'source', 'destination', 'source_lfn', 'destination_lfn', 'created', 'last_update'];
  var optional = ['group', 'role', 'owner', 'lease_expires', 'submit_sid', 'fts_job', 'source_pfn', 'dest_pfn',
    'retry_after', 'reason', 'claim_key'];
  required.forEach(function (f) { str(f, true); });
  optional.forEach(function (f) { str(f, false); });
  if (newDoc.source_lfn.charAt(0) !== '/') fail('source_lfn must be an absolute path');
  if (newDoc.destination_lfn.charAt(0) !== '/') fail('destination_lfn must be an absolute path');
  integer('size', true, 0);
  integer('priority', false);
  integer('attempts', false, 0);
  integer('fts_file_id', false);
  if (has('checksums')) {
    if (!isObject(newDoc.checksums)) fail('checksums must be an object');
    Object.keys(newDoc.checksums).forEach(function (k) {
      if (typeof newDoc.checksums[k] !== 'string') fail('checksums.' + k + ' must be a string');
    });
  }
  ['created', 'last_update', 'lease_expires', 'retry_after'].forEach(function (f) {
    if (!isTime(newDoc[f])) fail(f + ' must be an RFC 3339 timestamp');
  });
  if (has('depends_on')) {
    if (!Array.isArray(newDoc.depends_on)) fail('depends_on must be a list of transfer IDs');
    newDoc.depends_on.forEach(function (d) {
      if (typeof d !== 'string') fail('depends_on must be a list of transfer IDs');
    });
  }
  if (has('kill_requested') && typeof newDoc.kill_requested !== 'boolean') fail('kill_requested must be a boolean');
  if (has('history')) {
    if (!Array.isArray(newDoc.history)) fail('history must be a list');
    newDoc.history.forEach(function (h) {
      if (!isObject(h)) fail('history entries must be objects');
      if (!isTime(h.at)) fail('history.at must be an RFC 3339 timestamp');
      ['from', 'to', 'by', 'reason'].forEach(function (f) {
        if (h[f] !== undefined && h[f] !== null && typeof h[f] !== 'string') fail('history.' + f + ' must be a string');
      });
    });
  }
  if (has('progress')) {
    var p = newDoc.progress;
    if (!isObject(p)) fail('progress must be an object');
    if (!isTime(p.updated)) fail('progress.updated must be an RFC 3339 timestamp');
    ['fts_state', 'reason'].forEach(function (f) {
      if (p[f] !== undefined && p[f] !== null && typeof p[f] !== 'string') fail('progress.' + f + ' must be a string');
    });
    ['bytes', 'retries'].forEach(function (f) {
      if (p[f] !== undefined && p[f] !== null && !isInt(p[f])) fail('progress.' + f + ' must be an integer');
    });
    if (p.throughput !== undefined && p.throughput !== null && typeof p.throughput !== 'number') fail('progress.throughput must be a number');
  }

  var states = ['new', 'acquired', 'submitted', 'done', 'failed', 'killed'];
  var to = newDoc.state;
  if (states.indexOf(to) < 0) fail('unknown state ' + JSON.stringify(to));
  if (to === 'acquired' && (!newDoc.owner || !newDoc.lease_expires)) fail('an acquired transfer needs owner and lease_expires');
  if (to === 'submitted' && !newDoc.fts_job) fail('a submitted transfer needs fts_job');

  if (!wasTransfer) {
    return;
  }
  ['user', 'source', 'destination', 'source_lfn', 'destination_lfn'].forEach(function (f) {
    if (newDoc[f] !== oldDoc[f]) fail(f + ' must not change');
  });
  var from = oldDoc.state;
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
    var h = newDoc.history || [];
    var last = h.length > 0 ? h[h.length - 1] : null;
    ok = to === 'new' && last !== null && last.from === from && last.to === 'new' && last.reason === 'retry requested';
  } else if (from === 'new') {
    ok = to === 'acquired' || to === 'failed' || to === 'killed';
  } else if (from === 'acquired') {
    ok = to === 'acquired' || to === 'submitted' || to === 'new' || terminal(to);
  } else if (from === 'submitted') {
    ok = to === 'submitted' || to === 'new' || terminal(to);
  } else {
    ok = true; // an unknown stored state may be repaired
  }
  if (!ok) fail('illegal transition ' + from + ' -> ' + to);
}
