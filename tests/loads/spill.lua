#!/usr/bin/env sysbench
-- Temporary tables and sorts that spill to disk: range queries on the sysbench tables whose DISTINCT
-- temporary table outgrows the session's in-memory limit (MariaDB converts it to an Aria table on disk:
-- Created_tmp_disk_tables) and whose ORDER BY outgrows the sort buffer (filesort merges chunks from a
-- temporary file: Sort_merge_passes). The limits are set per session, as an application or a my.cnf with
-- small tmp_table_size / sort_buffer_size would leave them, so other sessions (the counter sampler's
-- SHOW GLOBAL STATUS) keep the server's defaults.
--
--   sysbench tests/loads/spill.lua --mysql-socket=S --mysql-user=U --mysql-password=P --mysql-db=sbtest \
--     --tables=2 --table-size=10000 --threads=2 --time=30 run      # over oltp_read_write's prepared tables

sysbench.cmdline.options = {
   tables = {"Tables sbtest1..N to read", 2},
   table_size = {"Rows per table", 10000},
   range_size = {"Rows per range", 2000},
   tmp_table_size = {"Session tmp_table_size and max_heap_table_size, bytes", 16384},
   sort_buffer_size = {"Session sort_buffer_size, bytes", 32768},
}

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
   con:query(string.format("SET SESSION tmp_table_size = %d, max_heap_table_size = %d, sort_buffer_size = %d",
      sysbench.opt.tmp_table_size, sysbench.opt.tmp_table_size, sysbench.opt.sort_buffer_size))
end

function event()
   local t = sysbench.rand.uniform(1, sysbench.opt.tables)
   local a = sysbench.rand.uniform(1, sysbench.opt.table_size - sysbench.opt.range_size + 1)
   local b = a + sysbench.opt.range_size - 1
   con:query(string.format("SELECT DISTINCT c FROM sbtest%d WHERE id BETWEEN %d AND %d ORDER BY c", t, a, b))
   con:query(string.format("SELECT c, pad FROM sbtest%d WHERE id BETWEEN %d AND %d ORDER BY c, pad", t, a, b))
end

function thread_done()
   con:disconnect()
end
