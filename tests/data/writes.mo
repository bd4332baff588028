// Writes at events, through functions declared as the library declares them (their C
// functions): a log line per sample, a matrix at the second, a file removed at the first.
// DIR is replaced by the directory the test writes into.
function print
  input String string = "";
  input String fileName = "";
  external "C" ModelicaInternal_print(string, fileName);
end print;

function writeRealMatrix
  input String fileName;
  input String matrixName;
  input Real matrix[:, :];
  input Boolean append = false;
  input String format = "4";
  output Boolean success;
  external "C" success = ModelicaIO_writeRealMatrix(fileName, matrixName, matrix, size(matrix, 1), size(matrix, 2), append, format);
end writeRealMatrix;

function removeFile
  input String fileName;
  external "C" ModelicaInternal_removeFile(fileName);
end removeFile;

function logState "One line of the log, written by a function of the model"
  input String fileName;
  input Integer n;
  input Real x;
protected
  String line;
algorithm
  line := "n = " + String(n) + ", x = " + String(x, significantDigits = 4);
  if x > 0.5 then
    line := line + " (above half)";
  end if;
  print(line, fileName);
end logState;

model Writes
  parameter String log = "DIR/log.txt";
  Real x(start = 1, fixed = true);
  Integer n(start = 0, fixed = true);
  Boolean stored(start = false, fixed = true);
equation
  der(x) = -x;
algorithm
  when sample(0.25, 0.25) then
    n := pre(n) + 1;
    if n == 1 then
      removeFile(log);
    end if;
    logState(log, n, x);
    if n == 2 then
      stored := writeRealMatrix("DIR/m.mat", "M", [time, x; n, 2 * x], format = "6");
    end if;
  end when;
end Writes;
