  function micros(t) {
    var m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|([+-])(\d\d):(\d\d))$/i.exec(typeof t === 'string' ? t : '');
    if (!m) {
      return 0;
    }
    var ms = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
    if (m[9]) {
      ms -= (m[9] === '-' ? -1 : 1) * (+m[10] * 60 + +m[11]) * 60000;
    }
    var frac = ((m[7] || '.').substring(1) + '000000').substring(0, 6);
    return ms * 1000 + parseInt(frac, 10);
  }
