function (doc) {
  // aso: the transfers by [user, result] of their last verification (aso
  // verify), while it holds (state.Transfer.LastVerification: no move to
  // another state after it), for fleet-wide monitoring (aso serve) to
  // count them in one query (reduced by _stats, group=true: one row per
  // key, count and newest verification); value: the verification's time in
  // microseconds since the epoch, 0 for none.
  // include micros.js
  if (doc.type !== 'transfer' || typeof doc.user !== 'string' || !Array.isArray(doc.history)) {
    return;
  }
  for (var i = doc.history.length - 1; i >= 0; i--) {
    var h = doc.history[i];
    if (h === null || typeof h !== 'object') continue;
    if (typeof h.verified === 'string' && h.verified !== '') {
      emit([doc.user, h.verified], micros(h.at));
      return;
    }
    if (h.from !== h.to) return;
  }
}
