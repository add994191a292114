#!/usr/bin/env sysbench
-- Hot rows: every session updates the same few rows of sbtest1 in short transactions (two updates with
-- point selects between them), so most sessions wait for a row lock (Innodb_row_lock_current_waits,
-- Innodb_row_lock_time). Each transaction locks its two rows in increasing id order: waits, no deadlocks.
--
--   sysbench tests/loads/hot_rows.lua --mysql-socket=S --mysql-user=U --mysql-password=P --mysql-db=sbtest \
--     --hot-rows=4 --threads=16 --time=30 run                     # over oltp_read_write's prepared sbtest1

sysbench.cmdline.options = {
   hot_rows = {"Rows everyone updates: ids 1..N of sbtest1", 4},
   reads = {"Point selects between a transaction's two updates", 2},
   table_size = {"Rows of sbtest1 the point selects read", 10000},
   hold_ms = {"Milliseconds each transaction waits between its two updates, the first row locked", 0},
}

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
end

function event()
   local a = sysbench.rand.uniform(1, sysbench.opt.hot_rows)
   local b = sysbench.rand.uniform(1, sysbench.opt.hot_rows)
   if b < a then a, b = b, a end
   con:query("BEGIN")
   con:query(string.format("UPDATE sbtest1 SET k = k + 1 WHERE id = %d", a))
   if sysbench.opt.hold_ms > 0 then
      con:query(string.format("SELECT SLEEP(%f)", sysbench.opt.hold_ms / 1000))
   end
   for _ = 1, sysbench.opt.reads do
      con:query(string.format("SELECT c FROM sbtest1 WHERE id = %d", sysbench.rand.uniform(1, sysbench.opt.table_size)))
   end
   con:query(string.format("UPDATE sbtest1 SET k = k + 1 WHERE id = %d", b))
   con:query("COMMIT")
end

function thread_done()
   con:disconnect()
end
