model StringFunctions
  import Modelica.Utilities.Strings;
  parameter String name = "Hello World";
  parameter Integer n = Strings.length(name);
  parameter Integer k = Strings.find(name, "World");
  parameter Integer last = Strings.findLast(name, "o");
  parameter Integer many = Strings.count(name, "l");
  parameter Boolean blank = Strings.isEmpty("  ");
  parameter Boolean same = Strings.isEqual(name, "hello world", caseSensitive = false);
  parameter Integer order = Integer(Strings.compare("abc", "abd"));
  Real x[n](each start = 1, each fixed = true);
  Real y;
equation
  der(x) = -x;
  y = if Strings.replace(name, "World", "Moon") == "Hello Moon" and Strings.repeat(2, "ab") == "abab" then 1 else 0;
end StringFunctions;
