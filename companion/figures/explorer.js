/* companion.show_attention's explorer: where one query token looks, in one head of one layer.

   Each explorer is a <div class="companion-attention"> that holds its tokens and controls as
   HTML and, in a <script type="application/json" class="ca-data">, the weights the notebook
   computed, rounded by Python: data.weights[layer][head][query][key]. This script computes
   nothing of its own: it shows the row of weights that the reader picks. Every explorer's
   output carries a copy of this script; whichever copy runs first sets up every explorer on
   the page that is not set up yet, so nothing depends on document.currentScript and nothing
   is left in the page's globals. */
(function () {
  'use strict';

  // Keys of the query list: a step along it, or a jump to one end.
  var STEPS = {ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1};
  var TOP = 3; // keys named in the readout line

  function quoted(token) {
    return "'" + token + "'";
  }

  // The same explorer shown twice on a page (the same data gives the same id) would share its
  // id and its radio groups: a later copy takes a suffix.
  function makeUnique(root) {
    if (document.getElementById(root.id) === root) return;
    var n = 2;
    while (document.getElementById(root.id + '-' + n)) n += 1;
    root.id += '-' + n;
    root.querySelectorAll('input[type=radio]').forEach(function (input) {
      input.name = root.id + '-' + input.getAttribute('data-axis');
    });
  }

  function setUp(root) {
    root.setAttribute('data-ready', '');
    makeUnique(root);
    var data = JSON.parse(root.querySelector('script.ca-data').textContent);
    var listbox = root.querySelector('.ca-queries');
    var options = Array.prototype.slice.call(listbox.querySelectorAll('[role=option]'));
    var keys = Array.prototype.slice.call(root.querySelectorAll('.ca-key'));
    var readout = root.querySelector('.ca-readout');
    var state = {layer: 0, head: 0, query: data.query};

    // Show query q's row: each key's bar, tint, number and tooltip, and the readout line.
    function show(q) {
      var row = data.weights[state.layer][state.head][q];
      keys.forEach(function (key, k) {
        var number = row[k].toFixed(data.decimals);
        key.style.setProperty('--w', row[k]);
        key.querySelector('.ca-fill').style.height = row[k] * 100 + '%';
        key.querySelector('.ca-weight').textContent = number;
        key.title = quoted(data.keys[k]) + ': ' + number;
      });
      // The keys with the largest weights, largest first (ties in key order), zeros left out.
      var order = row.map(function (w, k) { return k; })
        .filter(function (k) { return row[k] > 0; })
        .sort(function (a, b) { return row[b] - row[a] || a - b; })
        .slice(0, TOP);
      var where = [];
      if (data.layers.length > 1) where.push(data.layers[state.layer]);
      if (data.heads.length > 1) where.push(data.heads[state.head]);
      var text = (where.length ? where.join(', ') + ': ' : '') + 'query ' + quoted(data.queries[q]);
      readout.textContent = order.length === 0 ? text + ' attends to no key (masked)'
        : text + ' \u2192 ' + order.map(function (k) {
          return quoted(data.keys[k]) + ' ' + row[k].toFixed(data.decimals);
        }).join(', ');
    }

    // Select query q (one tab stop for the whole list: the selected option).
    function choose(q, focus) {
      state.query = q;
      options.forEach(function (option, i) {
        option.setAttribute('aria-selected', i === q ? 'true' : 'false');
        option.tabIndex = i === q ? 0 : -1;
      });
      if (focus) options[q].focus();
      show(q);
    }

    function optionOf(event) {
      var option = event.target.closest('[role=option]');
      return option && listbox.contains(option) ? Number(option.getAttribute('data-index')) : -1;
    }

    listbox.addEventListener('click', function (event) {
      var q = optionOf(event);
      if (q >= 0) choose(q, true);
    });
    // Hovering a query previews its row; leaving the list shows the selected one again.
    listbox.addEventListener('mouseover', function (event) {
      var q = optionOf(event);
      if (q >= 0) show(q);
    });
    listbox.addEventListener('mouseleave', function () { show(state.query); });
    listbox.addEventListener('keydown', function (event) {
      var q = state.query;
      if (event.key in STEPS) q = Math.min(Math.max(q + STEPS[event.key], 0), options.length - 1);
      else if (event.key === 'Home') q = 0;
      else if (event.key === 'End') q = options.length - 1;
      else if (event.key === 'Enter' || event.key === ' ') q = Math.max(optionOf(event), 0);
      else return;
      event.preventDefault(); // no scrolling, and no notebook shortcut (Jupyter's classic one)
      event.stopPropagation();
      choose(q, true);
    });

    // The layer and head radios, and the check box that shows every key's number.
    root.addEventListener('change', function (event) {
      var input = event.target;
      var axis = input.getAttribute('data-axis');
      if (axis && input.checked) {
        state[axis] = Number(input.value);
        show(state.query);
      } else if (input.classList.contains('ca-show-numbers')) {
        root.classList.toggle('ca-numbers-shown', input.checked);
      }
    });
    root.querySelectorAll('input[data-axis]').forEach(function (input) {
      input.checked = Number(input.value) === state[input.getAttribute('data-axis')];
    });
    root.querySelectorAll('.ca-show-numbers').forEach(function (input) {
      root.classList.toggle('ca-numbers-shown', input.checked);
    });
    choose(state.query, false);
  }

  document.querySelectorAll('.companion-attention:not([data-ready])').forEach(setUp);
})();
