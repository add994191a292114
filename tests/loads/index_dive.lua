#!/usr/bin/env sysbench
-- Optimizer index dives: SELECTs whose WHERE names many ranges on several secondary indexes, so
-- the range optimizer calls ha_innobase::records_in_range -> btr_estimate_n_rows_in_range once per
-- range per index, while the chosen plan (the primary key, id < 0) reads nothing.
--
--   sysbench tests/loads/index_dive.lua --mysql-socket=S --mysql-user=U --mysql-password=P \
--     --mysql-db=sbtest prepare
--   sysbench tests/loads/index_dive.lua ... --threads=16 --time=30 run
--
-- --range-width=0 gives IN lists (each range usually ends on one leaf page). With `id < 0` beside
-- them, MariaDB 11.4.5's optimizer trace shows each value as the range (v) <= (a,id) < (v,0): the
-- primary key ends the secondary index, so these are narrow ranges, not equalities, and
-- eq_range_index_dive_limit does not replace their dives (28 ms per query at 200 and at 10);
-- without `id < 0` the same IN lists are equalities (4.8 -> 2.4 ms per query at limit 10).
-- a width of a few thousand makes every range span several leaf pages, so the estimate also
-- walks the level (btr_estimate_n_rows_in_range_on_level, which looks the tablespace up with
-- fil_space_get under the fil_system mutex in MySQL 5.7 / MariaDB 10.2).

sysbench.cmdline.options = {
   table_size = {"Rows in table dive1", 200000},
   ranges = {"Ranges per indexed column in each SELECT", 40},
   range_width = {"Width of each BETWEEN range; 0 = IN list of single values", 2000},
   columns = {"Indexed columns (a, b, c, d) named in each SELECT, 1 to 4", 3},
   value_max = {"Values of a..d are uniform in [0, value_max)", 100000},
   index_hint = {"Index hint after the table name, e.g. 'FORCE INDEX (PRIMARY)' (the dive fix)", ""},
}

local COLUMNS = {"a", "b", "c", "d"}

local function create_table(con)
   con:query([[CREATE TABLE IF NOT EXISTS dive1 (
      id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
      a INT NOT NULL, b INT NOT NULL, c INT NOT NULL, d INT NOT NULL,
      pad CHAR(60) NOT NULL DEFAULT '',
      KEY ka (a), KEY kb (b), KEY kc (c), KEY kd (d), KEY kab (a, b)) ENGINE=InnoDB]])
end

function cmd_prepare()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   create_table(con)
   local vmax = sysbench.opt.value_max
   con:bulk_insert_init("INSERT INTO dive1 (a, b, c, d, pad) VALUES")
   for _ = 1, sysbench.opt.table_size do
      con:bulk_insert_next(string.format("(%d,%d,%d,%d,'%s')", sysbench.rand.uniform(0, vmax - 1),
         sysbench.rand.uniform(0, vmax - 1), sysbench.rand.uniform(0, vmax - 1),
         sysbench.rand.uniform(0, vmax - 1), sysbench.rand.string(string.rep("@", 60))))
   end
   con:bulk_insert_done()
   con:query("ANALYZE TABLE dive1")
   con:disconnect()
end

function cmd_cleanup()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   con:query("DROP TABLE IF EXISTS dive1")
   con:disconnect()
end

sysbench.cmdline.commands = {prepare = {cmd_prepare}, cleanup = {cmd_cleanup}}

local function column_ranges(column)
   local parts, width, vmax = {}, sysbench.opt.range_width, sysbench.opt.value_max
   for i = 1, sysbench.opt.ranges do
      local low = sysbench.rand.uniform(0, vmax - width - 1)
      if width == 0 then
         parts[i] = tostring(low)
      else
         parts[i] = string.format("%s BETWEEN %d AND %d", column, low, low + width)
      end
   end
   if width == 0 then
      return string.format("%s IN (%s)", column, table.concat(parts, ","))
   end
   return "(" .. table.concat(parts, " OR ") .. ")"
end

function dive_query()
   local conds = {}
   for i = 1, math.min(math.max(sysbench.opt.columns, 1), #COLUMNS) do
      conds[i] = column_ranges(COLUMNS[i])
   end
   return "SELECT COUNT(*) FROM dive1 " .. sysbench.opt.index_hint .. " WHERE id < 0 AND " ..
      table.concat(conds, " AND ")
end

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
end

function thread_done()
   con:disconnect()
end

function event()
   con:query(dive_query())
end
