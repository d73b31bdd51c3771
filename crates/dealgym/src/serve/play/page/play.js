// The play page's script: setup, joining and consent, then one game seen from one seat.
//
// It talks to /play/api/ only (see play-contract.md), puts every server string into the page
// as text (a study's consent html is the one exception), shows every refusal in #error, and
// records script errors, unhandled rejections and console.error in #console-errors so a
// headless browser can tell whether the page works.
(function () {
  'use strict';

  // --- Errors the page itself meets: counted for the browser test. ---------------------------
  const consoleErrors = document.getElementById('console-errors');
  function noteConsoleError(text) {
    consoleErrors.textContent += text + '\n';
    consoleErrors.setAttribute('data-count', String(Number(consoleErrors.getAttribute('data-count')) + 1));
  }
  window.addEventListener('error', function (e) { noteConsoleError('error: ' + e.message); });
  window.addEventListener('unhandledrejection', function (e) {
    const reason = e.reason;
    noteConsoleError('unhandledrejection: ' + (reason && reason.message ? reason.message : String(reason)));
  });
  const originalConsoleError = console.error;
  console.error = function () {
    noteConsoleError('console.error: ' + Array.prototype.map.call(arguments, String).join(' '));
    return originalConsoleError.apply(console, arguments);
  };

  const $ = function (id) { return document.getElementById(id); };

  // --- Storage: the seat token per game and the server token, in this tab only. -------------
  const SERVER_TOKEN_KEY = 'dealgym-play-server-token';
  const SEAT_KEY_PREFIX = 'dealgym-play-seat:';
  const NAME_KEY = 'dealgym-play-name';
  function stored(storage, key) {
    try { return window[storage].getItem(key); } catch (e) { return null; }
  }
  function store(storage, key, value) {
    try { window[storage].setItem(key, value); } catch (e) { /* storage refused: the page still works in this tab */ }
  }

  // --- The API: JSON in, JSON out, every refusal an ApiError with the server's message. ------
  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  let serverTokenAsked = null; // the pending question for the server token, shared by callers

  async function api(method, path, body, seatToken) {
    const headers = { accept: 'application/json' };
    if (body !== undefined) { headers['content-type'] = 'application/json'; }
    if (seatToken) { headers['x-seat-token'] = seatToken; }
    const serverToken = stored('sessionStorage', SERVER_TOKEN_KEY);
    if (serverToken) { headers.authorization = 'Bearer ' + serverToken; }
    let response;
    try {
      response = await fetch(path, {
        method: method,
        headers: headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: 'no-store',
      });
    } catch (e) {
      throw new ApiError(0, 'NETWORK', 'Could not reach the server (' + method + ' ' + path + '): ' +
        (e && e.message ? e.message : String(e)) + '. Is dealgym play still running?');
    }
    const text = await response.text();
    let json = null;
    try { json = text ? JSON.parse(text) : null; } catch (e) { json = null; }
    if (response.status === 401) {
      await askServerToken(serverToken ? 'The server refused that token; try again.' : '');
      return api(method, path, body, seatToken);
    }
    if (!response.ok) {
      const error = json && json.error;
      const message = error && error.message
        ? error.message
        : 'The server answered ' + response.status + ' ' + response.statusText + ' to ' + method + ' ' + path +
          (text ? ': ' + text.slice(0, 300) : '');
      throw new ApiError(response.status, error && error.code ? error.code : 'HTTP_' + response.status, message);
    }
    if (json === null) {
      throw new ApiError(response.status, 'NOT_JSON', 'The server\'s answer to ' + method + ' ' + path +
        ' is not JSON: ' + text.slice(0, 300));
    }
    return json;
  }

  /** Asks the person for the server's token once for every call waiting on it. */
  function askServerToken(why) {
    if (serverTokenAsked) { return serverTokenAsked; }
    serverTokenAsked = new Promise(function (resolve) {
      const section = $('server-auth');
      const form = $('server-auth-form');
      const input = $('server-token');
      showError(why);
      section.hidden = false;
      $('loading').hidden = true;
      input.value = '';
      input.focus();
      function done(e) {
        e.preventDefault();
        const token = input.value.trim();
        if (!token) { input.focus(); return; }
        store('sessionStorage', SERVER_TOKEN_KEY, token);
        form.removeEventListener('submit', done);
        section.hidden = true;
        showError('');
        serverTokenAsked = null;
        resolve();
      }
      form.addEventListener('submit', done);
    });
    return serverTokenAsked;
  }

  // --- Showing errors: a refusal or a network failure in #error; a bug also on the console. --
  /** Shows a message in #error (or clears it); `from` names who set it, so polling clears its own only. */
  function showError(message, from) {
    const box = $('error');
    box.textContent = message || '';
    box.hidden = !message;
    box.setAttribute('data-from', message && from ? from : '');
  }
  function fail(error, from) {
    $('loading').hidden = true;
    if (error instanceof ApiError) {
      showError(error.message, from);
    } else {
      showError('The page failed: ' + (error && error.message ? error.message : String(error)), from);
      console.error(error);
    }
  }

  // --- Sections: one of consent, joining, setup, game is shown. ------------------------------
  const SECTIONS = ['consent', 'joining', 'setup', 'game'];
  function showSection(id) {
    $('loading').hidden = true;
    SECTIONS.forEach(function (s) { $(s).hidden = s !== id; });
    if (id !== 'game') { stopPolling(); }
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  function setHash(hash) {
    history.replaceState(null, '', hash ? '#' + hash : location.pathname + location.search);
  }
  function parseHash() {
    const hash = location.hash.replace(/^#/, '');
    let m = /^join=([^.]+)\.(.+)$/.exec(hash);
    if (m) { return { join: { id: decodeURIComponent(m[1]), token: decodeURIComponent(m[2]) } }; }
    m = /^game=(.+)$/.exec(hash);
    if (m) { return { game: decodeURIComponent(m[1]) }; }
    return {};
  }

  // --- State of this tab. ---------------------------------------------------------------------
  const page = {
    setup: null,        // GET /play/api/setup's answer
    join: null,         // {id, token} from a #join= link
    gameId: null,
    seatToken: null,
    view: null,         // the last VIEW
    transcriptKey: '',  // what the transcript shows, to redraw only on change
    formKey: '',        // what the form was built from, to keep the person's input across polls
    pollTimer: null,
    lineTimer: null,
    lineSeq: 0,
    busy: false,        // a step is in flight
  };

  // --- Routing on load and when the person pastes another link into this tab. ---------------
  async function route() {
    showError('');
    const hash = parseHash();
    if (hash.join) {
      showJoining(hash.join);
      return;
    }
    if (hash.game) {
      const token = stored('sessionStorage', SEAT_KEY_PREFIX + hash.game);
      if (token) {
        await resume(hash.game, token);
        return;
      }
      setHash('');
      await showSetupOrConsent();
      showError('This tab holds no seat in game ' + hash.game + '. Start a new one.');
      return;
    }
    await showSetupOrConsent();
  }

  async function resume(gameId, token) {
    page.gameId = gameId;
    page.seatToken = token;
    try {
      const view = await api('GET', gameUrl(gameId), undefined, token);
      enterGame(gameId, token, view);
    } catch (error) {
      fail(error);
      if (error instanceof ApiError && error.status >= 400 && error.status < 500) {
        // The game is gone or the seat is not ours: offer a new one, keeping the message.
        const message = $('error').textContent;
        setHash('');
        await showSetupOrConsent();
        showError(message);
      }
    }
  }

  async function loadSetup() {
    if (!page.setup) { page.setup = await api('GET', '/play/api/setup'); }
    return page.setup;
  }

  async function showSetupOrConsent() {
    const setup = await loadSetup();
    if (setup.study) {
      showConsent(setup.study);
    } else {
      showSetup(setup);
    }
  }

  // --- Study consent. -------------------------------------------------------------------------
  function showConsent(study) {
    const html = study.consent_html || '';
    $('consent-title').textContent = study.title || 'Before you start';
    // The consent page usually opens with its own heading: then the page's is not repeated.
    $('consent-title').hidden = /<h[12][\s>]/i.test(html);
    $('consent-text').innerHTML = html; // the one server html the page inserts
    showSection('consent');
    $('agree').focus();
  }

  /** A study's game: the first on consent, each next one by the participant code. */
  async function startStudyGame(code) {
    const body = code ? { code: code } : { consent: true };
    const answer = await api('POST', '/play/api/games', body);
    enterGame(answer.game_id, answer.seat_token, answer.view);
  }

  // --- Open play: the setup form. -------------------------------------------------------------
  const KIND_GROUPS = [['party', 'Two parties'], ['table', 'Tables'], ['market', 'Markets']];

  function showSetup(setup) {
    const family = $('family');
    if (!family.options.length) {
      KIND_GROUPS.forEach(function (group) {
        const families = setup.families.filter(function (f) { return f.kind === group[0]; });
        if (!families.length) { return; }
        const optgroup = el('optgroup');
        optgroup.label = group[1];
        families.forEach(function (f) {
          const option = el('option', null, f.label || f.family);
          option.value = f.family;
          optgroup.appendChild(option);
        });
        family.appendChild(optgroup);
      });
      // A kind this page does not know still gets its families offered.
      const known = KIND_GROUPS.map(function (g) { return g[0]; });
      setup.families.filter(function (f) { return known.indexOf(f.kind) < 0; }).forEach(function (f) {
        const option = el('option', null, f.label || f.family);
        option.value = f.family;
        family.appendChild(option);
      });
      fillFamilyChoices();
    }
    const name = $('name');
    if (!name.value) { name.value = stored('localStorage', NAME_KEY) || ''; }
    showSection('setup');
    name.focus();
  }

  function chosenFamily() {
    const value = $('family').value;
    return page.setup.families.find(function (f) { return f.family === value; }) || null;
  }

  function option(value, text) {
    const node = el('option', null, text);
    node.value = value;
    return node;
  }

  /** The scenario, role and opponent choices of the chosen family. */
  function fillFamilyChoices() {
    const family = chosenFamily();
    const scenario = $('scenario');
    const role = $('role');
    const opponent = $('opponent');
    const keepOpponent = opponent.value;
    scenario.replaceChildren(option('', 'Draw one'));
    role.replaceChildren(option('', 'Drawn'));
    opponent.replaceChildren();
    if (!family) { return; }
    (family.scenarios || []).forEach(function (s) {
      scenario.appendChild(option(s.id, s.title ? s.id + ' — ' + s.title : s.id));
    });
    const more = $('scenario-more');
    more.hidden = !family.more;
    more.textContent = family.more ? family.more + ' more scenarios are in the draw.' : '';
    fillRoles();
    // A table or a market offers its own scripted players; a two-party game the server's.
    (family.opponents || page.setup.opponents || []).forEach(function (o) {
      opponent.appendChild(option(o.spec, o.label || o.spec));
    });
    if (page.setup.person_opponent) { opponent.appendChild(option('person', 'Another person (send them a link)')); }
    $('opponent-hint').hidden = family.kind === 'party';
    if (Array.prototype.some.call(opponent.options, function (o) { return o.value === keepOpponent; })) {
      opponent.value = keepOpponent;
    }
  }

  /**
   * The roles a person may ask for: the chosen scenario's own (the setup lists them per
   * scenario), or for a drawn scenario the family's when every listed scenario has those roles
   * (a table's scenarios seat different parties, so there only "drawn" is offered).
   */
  function fillRoles() {
    const family = chosenFamily();
    const role = $('role');
    const keep = role.value;
    role.replaceChildren(option('', 'Drawn'));
    if (!family) { return; }
    const scenarios = family.scenarios || [];
    const chosen = scenarios.find(function (s) { return s.id === $('scenario').value; });
    const same = function (s) { return !s.roles || JSON.stringify(s.roles) === JSON.stringify(family.roles); };
    const roles = chosen ? (chosen.roles || family.roles || [])
      : scenarios.every(same) ? (family.roles || []) : [];
    roles.filter(Boolean).forEach(function (r) { role.appendChild(option(r, r)); });
    if (Array.prototype.some.call(role.options, function (o) { return o.value === keep; })) { role.value = keep; }
  }

  async function start() {
    const name = $('name').value.trim();
    const body = {
      name: name,
      family: $('family').value,
      scenario_id: $('scenario').value || null,
      role: $('role').value || null,
    };
    const opponent = $('opponent').value;
    if (opponent) { body.opponent = opponent; }
    store('localStorage', NAME_KEY, name);
    const answer = await api('POST', '/play/api/games', body);
    enterGame(answer.game_id, answer.seat_token, answer.view);
  }

  // --- Joining a person's game by link. -------------------------------------------------------
  function showJoining(join) {
    page.join = join;
    const name = $('join-name');
    if (!name.value) { name.value = stored('localStorage', NAME_KEY) || ''; }
    showSection('joining');
    name.focus();
  }

  async function join() {
    const name = $('join-name').value.trim();
    store('localStorage', NAME_KEY, name);
    const answer = await api('POST', '/play/api/games/' + encodeURIComponent(page.join.id) + '/join',
      { name: name, join_token: page.join.token });
    enterGame(answer.game_id, answer.seat_token, answer.view);
  }

  // --- The game. ------------------------------------------------------------------------------
  function gameUrl(id) { return '/play/api/games/' + encodeURIComponent(id); }

  function enterGame(gameId, seatToken, view) {
    page.gameId = gameId;
    page.seatToken = seatToken;
    page.view = null;
    page.transcriptKey = '';
    page.formKey = '';
    store('sessionStorage', SEAT_KEY_PREFIX + gameId, seatToken);
    setHash('game=' + encodeURIComponent(gameId));
    $('talk').value = '';
    $('thought').value = '';
    $('brief').open = false;
    showError('');
    showSection('game');
    render(view);
    schedulePreview();
    $('game-title').scrollIntoView({ block: 'start' });
  }

  function turnOf(view) {
    if (view.done) { return 'done'; }
    return view.your_turn ? 'yours' : 'theirs';
  }

  /** Shows a VIEW: the whole game as this seat sees it. */
  function render(view) {
    page.view = view;
    const game = $('game');
    const turn = turnOf(view);
    game.setAttribute('data-turn', turn);

    $('game-title').textContent = view.title || view.scenario_id || 'Negotiation';
    $('game-description').textContent = view.description || '';
    const you = view.you || {};
    $('game-meta').textContent = 'You are ' + (you.name || 'you') + ', playing ' + (you.role || 'a seat') +
      ' · ' + (view.family || '') + ' · scenario ' + (view.scenario_id || '?') + ' · game ' + view.game_id;
    $('status').textContent = turn === 'done' ? 'The negotiation is over'
      : turn === 'yours' ? 'Your turn'
        : 'Waiting for ' + (view.to_move || 'the other side') + '…';

    renderJoin(view.join);
    renderFacts(view.facts || []);
    renderPlayers(view);
    $('brief-text').textContent = view.brief || '';
    renderTranscript(view.transcript || [], otherRole(view));
    renderForm(view, turn);
    renderOutcome(view);

    if (turn === 'theirs') { schedulePoll(); } else { stopPolling(); }
  }

  function renderJoin(join) {
    const box = $('join-box');
    if (join && join.path) {
      $('join-link').textContent = location.origin + join.path;
      box.hidden = false;
    } else {
      box.hidden = true;
      $('join-link').textContent = '';
    }
  }

  function renderFacts(facts) {
    const list = $('facts');
    list.replaceChildren();
    if (!facts.length) {
      list.appendChild(el('dt', 'muted', 'Nothing beyond the instructions.'));
      return;
    }
    facts.forEach(function (fact) {
      const value = String(fact.value);
      list.appendChild(el('dt', null, fact.label));
      list.appendChild(el('dd', value.length > 24 ? 'long' : null, value));
    });
  }

  function renderPlayers(view) {
    const list = $('players');
    list.replaceChildren();
    const mine = view.you && view.you.role;
    (view.players || []).forEach(function (p) {
      const item = el('li');
      item.appendChild(el('strong', null, p.role));
      item.appendChild(document.createTextNode(' — ' + (p.who || 'waiting for a person to join')));
      if (p.role === mine) { item.appendChild(el('span', 'tag', 'you')); }
      if (!view.done && p.role === view.to_move) { item.appendChild(el('span', 'tag turn', 'to move')); }
      list.appendChild(item);
    });
  }

  /** In a two-party game, the one role a message from `them` can come from. */
  function otherRole(view) {
    const mine = view.you && view.you.role;
    const others = (view.players || []).filter(function (p) { return p.role !== mine; });
    return others.length === 1 ? others[0].role : null;
  }

  function renderTranscript(transcript, other) {
    const key = JSON.stringify([transcript, other]);
    if (key === page.transcriptKey) { return; }
    page.transcriptKey = key;
    const box = $('transcript');
    box.replaceChildren();
    if (!transcript.length) {
      box.appendChild(el('p', 'empty', 'Nothing has been said yet.'));
    }
    transcript.forEach(function (m) {
      const msg = el('div', 'msg');
      msg.setAttribute('data-from', m.from);
      const who = m.from === 'you' ? 'You' + (m.role ? ' (' + m.role + ')' : '')
        : m.from === 'table' ? 'Table' + (m.role ? ' · ' + m.role : '')
          : (m.role || other || 'Them');
      msg.appendChild(el('span', 'who', who));
      msg.appendChild(el('span', 'text', m.text));
      box.appendChild(msg);
    });
    box.scrollTop = box.scrollHeight;
  }

  /** The move form: rebuilt only when the server's form changes, so typing survives polls. */
  function renderForm(view, turn) {
    const form = view.form || { moves: [], terms: [], offers: [] };
    $('turn-form').hidden = turn === 'done';
    $('turn-title').textContent = turn === 'yours' ? 'Your turn' : 'Their turn — you can write your next words meanwhile';
    const retry = $('retry');
    if (view.retry && view.retry.error) {
      let text = 'Your last turn was refused: ' + view.retry.error;
      if (typeof view.retry.retries_left === 'number') {
        text += '\nTries left: ' + view.retry.retries_left + '.';
      }
      retry.textContent = text;
      retry.hidden = false;
    } else {
      retry.hidden = true;
      retry.textContent = '';
    }

    const key = JSON.stringify([form.moves || [], form.terms || [], form.offers || []]);
    if (key !== page.formKey) {
      page.formKey = key;
      buildMoves(form.moves || []);
      buildTerms(form.terms || []);
      buildOffers(form.offers || []);
    }
    updateFormState();
  }

  function buildMoves(moves) {
    const box = $('moves');
    const before = chosenMove();
    box.replaceChildren();
    moves.forEach(function (move, i) {
      const id = 'move-' + i;
      const label = el('label');
      label.htmlFor = id;
      const input = el('input');
      input.type = 'radio';
      input.name = 'move';
      input.id = id;
      input.value = move.kind;
      if (move.kind === before) { input.checked = true; }
      label.appendChild(input);
      label.appendChild(el('span', null, move.label || move.kind));
      box.appendChild(label);
    });
    $('no-moves').hidden = moves.length > 0;
  }

  function buildTerms(terms) {
    const box = $('term-fields');
    const before = {};
    box.querySelectorAll('[data-term]').forEach(function (c) { before[c.getAttribute('data-term')] = c.value; });
    box.replaceChildren();
    terms.forEach(function (term, i) {
      const field = el('div', 'field');
      const id = 'term-' + i;
      const label = el('label', null, term.label || term.key);
      label.htmlFor = id;
      let control;
      if (term.type === 'option') {
        control = el('select');
        (term.options || []).forEach(function (o) { control.appendChild(option(o, o)); });
      } else {
        control = el('input');
        control.type = 'number';
        if (term.min !== undefined && term.min !== null) { control.min = String(term.min); }
        if (term.max !== undefined && term.max !== null) { control.max = String(term.max); }
        control.step = term.step !== undefined && term.step !== null ? String(term.step)
          : term.type === 'count' ? '1' : 'any';
        control.inputMode = term.type === 'count' ? 'numeric' : 'decimal';
        if (term.type === 'count' && term.min !== undefined && term.min !== null) { control.value = String(term.min); }
        if (term.blank !== undefined && term.blank !== null) { control.placeholder = String(term.blank) + ' if left empty'; }
      }
      control.id = id;
      control.setAttribute('data-term', term.key);
      control.setAttribute('data-type', term.type);
      if (before[term.key] !== undefined && before[term.key] !== '') { control.value = before[term.key]; }
      field.appendChild(label);
      field.appendChild(control);
      box.appendChild(field);
    });
  }

  function buildOffers(offers) {
    const select = $('offer');
    const before = select.value;
    select.replaceChildren();
    offers.forEach(function (o) {
      select.appendChild(option(String(o.id), '#' + o.id + ' by ' + o.by + ': ' + o.text));
    });
    if (Array.prototype.some.call(select.options, function (o) { return o.value === before; })) {
      select.value = before;
    }
  }

  function chosenMove() {
    const checked = document.querySelector('#moves input[name=move]:checked');
    return checked ? checked.value : null;
  }

  /** Shows the controls the chosen move takes and enables #send when a move can be sent. */
  function updateFormState() {
    const view = page.view;
    const move = chosenMove();
    const offers = (view && view.form && view.form.offers) || [];
    $('terms').hidden = move !== 'submit' || !$('term-fields').children.length;
    $('offer-field').hidden = move !== 'accept' || !offers.length;
    const shown = offers.find(function (o) { return String(o.id) === $('offer').value; });
    $('offer-text').textContent = shown ? 'Offer #' + shown.id + ' by ' + shown.by + ': ' + shown.text : '';
    $('send').disabled = !(view && view.your_turn && !view.done && move) || page.busy;
  }

  /** The body of step and line, from the controls. */
  function turnBody() {
    const move = chosenMove();
    // The server takes terms only with a proposal and an offer only with an acceptance:
    // they are left out of every other move (a null would be refused).
    const body = {
      thought: $('thought').value,
      talk: $('talk').value,
      move: { kind: move },
    };
    if (move === 'submit') {
      const terms = {};
      $('term-fields').querySelectorAll('[data-term]').forEach(function (c) {
        const key = c.getAttribute('data-term');
        if (c.getAttribute('data-type') === 'option') {
          terms[key] = c.value;
        } else {
          terms[key] = c.value === '' ? null : Number(c.value);
        }
      });
      body.move.terms = terms;
    }
    if (move === 'accept' && !$('offer-field').hidden && $('offer').value !== '') {
      // The offer's id as the server wrote it (a number in the contract), not the select's string.
      const offers = (page.view && page.view.form && page.view.form.offers) || [];
      const chosen = offers.find(function (o) { return String(o.id) === $('offer').value; });
      body.move.offer = chosen ? chosen.id : $('offer').value;
    }
    return body;
  }

  /** The terms still empty; a term with a `blank` may stay empty (the server reads it as that value). */
  function missingTerms(body) {
    if (!body.move.terms) { return []; }
    const blanks = {};
    ((page.view && page.view.form && page.view.form.terms) || []).forEach(function (t) {
      if (t.blank !== undefined && t.blank !== null) { blanks[t.key] = true; }
    });
    return Object.keys(body.move.terms).filter(function (k) {
      const v = body.move.terms[k];
      if (v === null) { return !blanks[k]; }
      return typeof v === 'number' && !isFinite(v);
    });
  }

  // --- The preview: the exact completion, asked of the server after each change. ------------
  function schedulePreview() {
    clearTimeout(page.lineTimer);
    page.lineTimer = setTimeout(function () {
      preview().catch(fail);
    }, 150);
  }

  function setPreview(text, muted) {
    const box = $('preview');
    box.textContent = text;
    box.classList.toggle('muted', !!muted);
  }

  async function preview() {
    const view = page.view;
    const seq = ++page.lineSeq;
    if (!view || !view.your_turn || view.done) {
      setPreview('The line appears here on your turn.', true);
      return;
    }
    const body = turnBody();
    if (!body.move.kind) {
      setPreview('Choose a move to see the exact line the server will send.', true);
      return;
    }
    const missing = missingTerms(body);
    if (missing.length) {
      setPreview('Fill in ' + missing.join(', ') + ' to see the line.', true);
      return;
    }
    const gameId = page.gameId;
    try {
      const answer = await api('POST', gameUrl(gameId) + '/line', body, page.seatToken);
      if (seq !== page.lineSeq || gameId !== page.gameId) { return; }
      // A move that cannot be written yet (a term out of range) answers why, muted.
      if (answer.error) { setPreview(answer.error, true); } else { setPreview(answer.text, false); }
    } catch (error) {
      if (seq !== page.lineSeq || gameId !== page.gameId) { return; }
      throw error;
    }
  }

  // --- Sending a turn. ------------------------------------------------------------------------
  async function send() {
    const view = page.view;
    if (!view || !view.your_turn || view.done || page.busy) { return; }
    const body = turnBody();
    if (!body.move.kind) { showError('Choose a move first.'); return; }
    const missing = missingTerms(body);
    if (missing.length) {
      showError('Fill in every term of your proposal: ' + missing.join(', ') + ' is missing.');
      return;
    }
    showError('');
    page.busy = true;
    $('send').textContent = 'Sending…';
    updateFormState();
    const gameId = page.gameId;
    try {
      const next = await api('POST', gameUrl(gameId) + '/step', body, page.seatToken);
      if (gameId !== page.gameId) { return; }
      if (!next.retry) {
        $('talk').value = '';
        $('thought').value = '';
        document.querySelectorAll('#moves input[name=move]').forEach(function (r) { r.checked = false; });
      }
      page.busy = false;
      render(next);
      schedulePreview();
      if (next.retry) { $('retry').scrollIntoView({ block: 'nearest' }); }
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 409)) { throw error; }
      // Not this seat's turn after all (another tab played it): say so and show the game as it is.
      fail(error);
      const fresh = await api('GET', gameUrl(gameId), undefined, page.seatToken);
      if (gameId === page.gameId) { page.busy = false; render(fresh); }
    } finally {
      page.busy = false;
      $('send').textContent = 'Send';
      updateFormState();
    }
  }

  // --- Polling while it is the other side's turn. -------------------------------------------
  function schedulePoll() {
    if (page.pollTimer !== null) { return; }
    page.pollTimer = setTimeout(poll, 1000);
  }

  function stopPolling() {
    if (page.pollTimer !== null) { clearTimeout(page.pollTimer); }
    page.pollTimer = null;
  }

  async function poll() {
    page.pollTimer = null;
    const gameId = page.gameId;
    if ($('game').hidden || !gameId || !page.view || turnOf(page.view) !== 'theirs') { return; }
    try {
      const view = await api('GET', gameUrl(gameId), undefined, page.seatToken);
      if (gameId !== page.gameId || $('game').hidden) { return; }
      if ($('error').getAttribute('data-from') === 'poll') { showError(''); }
      const wasTheirs = turnOf(page.view) === 'theirs';
      render(view);
      if (wasTheirs && turnOf(view) !== 'theirs') { schedulePreview(); }
    } catch (error) {
      fail(error, 'poll');
      // A refusal (the game is gone, the seat is not ours) ends the polling; a network
      // failure or a server error is tried again.
      if (error instanceof ApiError && error.status >= 400 && error.status < 500) { return; }
      if (!(error instanceof ApiError)) { return; }
      schedulePoll();
    }
  }

  // --- The end. -------------------------------------------------------------------------------
  function renderOutcome(view) {
    const box = $('outcome');
    const outcome = view.outcome;
    if (!view.done && !outcome) {
      box.hidden = true;
      box.setAttribute('data-kind', '');
      return;
    }
    box.hidden = false;
    box.setAttribute('data-kind', outcome && outcome.kind ? outcome.kind : 'ended');
    $('outcome-title').textContent = outcomeTitle(outcome && outcome.kind);
    $('outcome-text').textContent = outcome && outcome.text ? outcome.text : '';
    const figures = $('outcome-figures');
    figures.replaceChildren();
    function figure(name, value) {
      if (value === undefined || value === null) { return; }
      const row = el('div');
      row.appendChild(el('dt', null, name));
      row.appendChild(el('dd', null, typeof value === 'number' ? round(value) : value));
      figures.appendChild(row);
    }
    if (outcome) {
      figure('Your points', outcome.utility);
      figure('ρ (share of what was there to win)', outcome.rho);
    }
    const study = view.study;
    $('study-end').hidden = !study;
    $('code').textContent = study && study.code ? study.code : '';
    $('study-message').textContent = study && study.message ? study.message : '';
    const again = $('again');
    if (study) {
      again.hidden = !study.next;
      again.textContent = 'Start the next negotiation';
    } else {
      again.hidden = false;
      again.textContent = 'Play again';
    }
  }

  function outcomeTitle(kind) {
    switch (kind) {
      case 'deal': return 'A deal';
      case 'walk_away': return 'Someone walked away';
      case undefined: case null: case '': return 'The negotiation is over';
      default: return 'The negotiation is over: ' + String(kind).replace(/_/g, ' ');
    }
  }

  /** A figure to three decimals at most, without trailing zeros. */
  function round(x) {
    return String(Number(x.toFixed(3)));
  }

  async function again() {
    const view = page.view;
    stopPolling();
    if (view && view.study) {
      if (view.study.next) { await startStudyGame(view.study.code); }
      return;
    }
    page.gameId = null;
    page.view = null;
    setHash('');
    await showSetupOrConsent();
  }

  // --- Wiring. --------------------------------------------------------------------------------
  function guarded(action) {
    return function (e) {
      if (e) { e.preventDefault(); }
      Promise.resolve().then(action).catch(fail);
    };
  }

  /** Runs an action with its button disabled, so a double click starts one game. */
  function once(button, action) {
    return guarded(async function () {
      if (button.disabled) { return; }
      button.disabled = true;
      try { await action(); } finally { button.disabled = false; }
    });
  }

  $('setup-form').addEventListener('submit', once($('start'), start));
  $('join-form').addEventListener('submit', once($('join'), join));
  $('agree').addEventListener('click', once($('agree'), function () { return startStudyGame(null); }));
  // A participant who left comes back with their code: their unfinished game, or their next.
  $('resume-form').addEventListener('submit', once($('resume'), function () {
    return startStudyGame($('code-input').value.trim());
  }));
  $('again').addEventListener('click', once($('again'), again));
  $('family').addEventListener('change', function () { fillFamilyChoices(); });
  $('scenario').addEventListener('change', function () { fillRoles(); });
  $('turn-form').addEventListener('submit', guarded(send));
  $('copy-join').addEventListener('click', guarded(async function () {
    const link = $('join-link').textContent;
    const state = $('copy-state');
    try {
      await navigator.clipboard.writeText(link);
      state.textContent = 'Copied.';
    } catch (e) {
      // No clipboard (an insecure origin, or refused): select the link for a manual copy.
      const range = document.createRange();
      range.selectNodeContents($('join-link'));
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      state.textContent = 'Selected: press Ctrl+C to copy.';
    }
  }));

  $('turn-form').addEventListener('change', function () { updateFormState(); schedulePreview(); });
  $('turn-form').addEventListener('input', function () { updateFormState(); schedulePreview(); });
  ['talk', 'thought'].forEach(function (id) {
    $(id).addEventListener('keydown', function (e) {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        if (!$('send').disabled) { $('turn-form').requestSubmit(); }
      }
    });
  });

  window.addEventListener('hashchange', guarded(route));

  guarded(route)();
})();
